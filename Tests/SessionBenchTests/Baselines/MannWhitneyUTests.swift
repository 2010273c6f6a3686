import Foundation
import SessionBench
import Testing

@Suite("Mann–Whitney U")
struct MannWhitneyUTests {
    /// The two-sided p-value by enumerating every split of the pooled values: the definition
    /// the test's dynamic programme must agree with.
    static func bruteForceP(_ first: [Double], _ second: [Double]) -> Double {
        let pooled = first + second
        let sorted = pooled.sorted()
        func rank(_ value: Double) -> Double {
            let below = sorted.count { $0 < value }
            let equal = sorted.count { $0 == value }
            return Double(below) + Double(equal + 1) / 2
        }
        let ranks = pooled.map(rank)
        let m = first.count
        let mean = Double(m) * Double(pooled.count + 1) / 2
        let observed = abs(ranks[..<m].reduce(0, +) - mean)
        var extreme = 0
        var all = 0
        func choose(_ start: Int, _ left: Int, _ sum: Double) {
            if left == 0 {
                all += 1
                if abs(sum - mean) >= observed - 1e-9 { extreme += 1 }
                return
            }
            guard start < ranks.count else { return }
            for index in start..<ranks.count { choose(index + 1, left - 1, sum + ranks[index]) }
        }
        choose(0, m, 0)
        return Double(extreme) / Double(all)
    }

    @Test("complete separation of 5 and 5 gives p = 2/252, the smallest those sizes can give")
    func separation() throws {
        let outcome = try #require(MannWhitneyU.test([6, 7, 8, 9, 10], [1, 2, 3, 4, 5]))
        #expect(abs(outcome.p - 2.0 / 252) < 1e-12)
        #expect(outcome.u == 25)
        #expect(outcome.method == "exact")
        #expect(abs(MannWhitneyU.smallestP(5, 5) - 2.0 / 252) < 1e-12)
        #expect(abs(MannWhitneyU.smallestP(3, 3) - 0.1) < 1e-12)
        #expect(MannWhitneyU.smallestP(3, 3) > 0.05, "3 repeats a side can never be significant at 0.05")
        // Above the exact limit the floor is the approximation's, which one baseline run never gets below.
        #expect(MannWhitneyU.smallestP(1, 250) > 0.05)
        #expect(MannWhitneyU.smallestP(20, 20) < 1e-6)
    }

    @Test("identical samples, or all values tied, give p = 1")
    func identical() throws {
        #expect(try #require(MannWhitneyU.test([1, 2, 3, 4], [1, 2, 3, 4])).p == 1)
        #expect(try #require(MannWhitneyU.test([7, 7, 7], [7, 7, 7, 7])).p == 1)
        #expect(MannWhitneyU.test([], [1]) == nil)
    }

    @Test("the exact p-value equals full enumeration, with and without ties", arguments: 0..<40)
    func exactAgreesWithEnumeration(seed: Int) throws {
        var generator = SeededGenerator(seed: UInt64(seed) + 1)
        let m = Int.random(in: 1...7, using: &generator)
        let n = Int.random(in: 1...7, using: &generator)
        // Half the cases draw from few values, so ties are common.
        let spread = seed.isMultiple(of: 2) ? 1000 : 4
        let first = (0..<m).map { _ in Double(Int.random(in: 0..<spread, using: &generator)) }
        let second = (0..<n).map { _ in Double(Int.random(in: 0..<spread, using: &generator)) + 1 }
        let outcome = try #require(MannWhitneyU.test(first, second))
        #expect(abs(outcome.p - Self.bruteForceP(first, second)) < 1e-9, "\(first) vs \(second)")
        // Symmetric: swapping the samples changes U, not p.
        let swapped = try #require(MannWhitneyU.test(second, first))
        #expect(abs(swapped.p - outcome.p) < 1e-9)
        #expect(abs(swapped.u + outcome.u - Double(m * n)) < 1e-9)
    }

    @Test("above the exact limit the normal approximation is used, and finds a clear shift")
    func normalApproximation() throws {
        var generator = SeededGenerator(seed: 7)
        let first = (0..<15).map { _ in Double.random(in: 0..<1, using: &generator) }
        let second = (0..<15).map { _ in Double.random(in: 0.2..<1.2, using: &generator) }
        let exact = try #require(MannWhitneyU.test(first, second))
        #expect(exact.method == "exact")
        let larger = try #require(MannWhitneyU.test(first + first.map { $0 + 1e-6 }, second + second.map { $0 + 1e-6 }))
        #expect(larger.method == "normal approximation")
        // Shifted samples of 60 are far apart; the approximation must say so.
        let apart = try #require(
            MannWhitneyU.test((0..<31).map { Double($0) }, (0..<31).map { Double($0) + 100 }))
        #expect(apart.method == "normal approximation")
        #expect(apart.p < 1e-9)
        #expect(exact.p > 0 && exact.p <= 1 && larger.p > 0 && larger.p <= 1)
    }
}

/// A small deterministic generator for the tests' random inputs (SplitMix64).
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
