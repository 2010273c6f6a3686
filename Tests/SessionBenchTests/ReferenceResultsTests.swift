import Foundation
import SessionBench
import Testing

/// `results/` holds reference runs and the charts made from them; they must stay readable by
/// the current tool and plot script.
@Suite("Reference results")
struct ReferenceResultsTests {
    static let results = CommandLineTests.packageRoot.appendingPathComponent("results")

    @Test("every CSV in results/ has the header the tool writes today")
    func headersMatch() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.results.path).filter { $0.hasSuffix(".csv") }
        #expect(files.count >= 4)
        let header = ResultsReport.csvColumns.joined(separator: ",")
        for file in files {
            let text = try String(contentsOf: Self.results.appendingPathComponent(file), encoding: .utf8)
            #expect(text.components(separatedBy: "\r\n").first == header, "\(file) was written by an older schema; rerun results/reproduce")
        }
    }

    @Test("the charts made from them are checked in, with the machine they came from")
    func chartsAndMachine() throws {
        let charts = try FileManager.default.contentsOfDirectory(atPath: Self.results.appendingPathComponent("charts").path)
            .filter { $0.hasSuffix(".png") }
        #expect(charts.count >= 4)
        let machine = try String(contentsOf: Self.results.appendingPathComponent("machine.md"), encoding: .utf8)
        #expect(machine.contains("toolchain: Swift version"))
        #expect(machine.contains("commit: "))
    }
}
