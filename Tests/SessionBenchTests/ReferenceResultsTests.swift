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
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.results.path).filter {
            $0.hasSuffix(".csv")
        }
        #expect(files.count >= 4)
        let header = ResultsReport.csvColumns.joined(separator: ",")
        for file in files {
            let text = try String(contentsOf: Self.results.appendingPathComponent(file), encoding: .utf8)
            #expect(
                text.components(separatedBy: "\r\n").first == header,
                "\(file) was written by an older schema; rerun results/reproduce")
        }
    }

    @Test("every row of every CSV, and every JSON report, in results/ is at the schema the tool writes today")
    func oneSchema() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.results.path)
        let schema = "\(ResultsReport.csvSchemaVersion)"
        for file in names.filter({ $0.hasSuffix(".csv") }) {
            let text = try String(contentsOf: Self.results.appendingPathComponent(file), encoding: .utf8)
            let rows = text.components(separatedBy: "\r\n").dropFirst().filter { !$0.isEmpty }
            #expect(!rows.isEmpty, "\(file) has no rows")
            for row in rows {
                #expect(row.hasPrefix(schema + ","), "\(file) holds a row of another schema; rerun results/reproduce")
            }
        }
        for file in names.filter({ $0.hasSuffix(".json") }) {
            let data = try Data(contentsOf: Self.results.appendingPathComponent(file))
            let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(file)")
            #expect(
                object["schemaVersion"] as? Int == ResultsReport.csvSchemaVersion,
                "\(file) was written at schema \(object["schemaVersion"] ?? "none"); rerun results/reproduce")
        }
    }

    @Test("FINDINGS.md was written from the same run as the results and the machine file")
    func findingsFromTheSameRun() throws {
        let machine = try String(contentsOf: Self.results.appendingPathComponent("machine.md"), encoding: .utf8)
        let commit = try #require(
            machine.components(separatedBy: "\n").first { $0.hasPrefix("- commit: ") }?.dropFirst("- commit: ".count))
        let findings = try String(contentsOf: Self.results.appendingPathComponent("FINDINGS.md"), encoding: .utf8)
        #expect(findings.contains("commit \(commit)"), "FINDINGS.md is from another run; rerun results/findings")
    }

    @Test("the charts and the page drawn from them are checked in, every chart FINDINGS.md shows among them")
    func chartsAndMachine() throws {
        let charts = try FileManager.default.contentsOfDirectory(
            atPath: Self.results.appendingPathComponent("charts").path
        )
        .filter { $0.hasSuffix(".svg") }
        #expect(charts.count >= 4)
        let findings = try String(contentsOf: Self.results.appendingPathComponent("FINDINGS.md"), encoding: .utf8)
        let shown = findings.components(separatedBy: "](charts/").dropFirst().compactMap {
            $0.split(separator: ")").first
        }
        #expect(shown.count >= 8)
        for chart in shown {
            #expect(charts.contains(String(chart)), "FINDINGS.md shows charts/\(chart), which is not there")
        }
        let page = try String(contentsOf: Self.results.appendingPathComponent("report.html"), encoding: .utf8)
        #expect(page.hasPrefix("<!DOCTYPE html>") && page.contains("id=\"chart-compare-refreshes-expiry-storm\""))
        let machine = try String(contentsOf: Self.results.appendingPathComponent("machine.md"), encoding: .utf8)
        #expect(machine.contains("toolchain: Swift version"))
        #expect(machine.contains("commit: "))
    }
}
