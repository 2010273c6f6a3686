import Foundation
import SessionOracle
import Testing

@Suite("Lifecycle coverage: the transitions a run drove")
struct LifecycleCoverageTests {
    private func coverage(_ transitions: [LifecycleCoverage.Transition], parked: Bool = false) throws
        -> LifecycleCoverage
    {
        struct Form: Encodable {
            let seen: [LifecycleCoverage.Transition]
            let parkedAcrossFence: Bool
            let readRightAfterFence: Bool
        }
        let data = try JSONEncoder().encode(
            Form(seen: transitions, parkedAcrossFence: parked, readRightAfterFence: false))
        return try JSONDecoder().decode(LifecycleCoverage.self, from: data)
    }

    @Test("every transition of every state keeps its own place: seen, missing, merged and encoded as it was")
    func everyTransition() throws {
        let all = LifecycleCoverage.State.allCases.flatMap { state in
            LifecycleCoverage.Event.allCases.map { LifecycleCoverage.Transition(state: state, event: $0) }
        }
        for transition in all {
            let one = try coverage([transition])
            #expect(one.seen == [transition])
            let missing = one.missing(synchronousRead: true).missing
            #expect(!missing.contains(transition))
            #expect(
                missing.count == LifecycleCoverage.expected.count
                    - (LifecycleCoverage.expected.contains(transition) ? 1 : 0))
        }
        var merged = try coverage(Array(all.prefix(40)), parked: true)
        merged.merge(try coverage(Array(all.dropFirst(30))))
        #expect(merged.seen == Set(all))
        #expect(merged.parkedAcrossFence && !merged.readRightAfterFence)
        #expect(merged.missing(synchronousRead: true).missing.isEmpty)
        #expect(try coverage(all, parked: true) == merged)
    }

    @Test("the encoded form lists what was seen, in order, with both flags, and reads back equal")
    func encoded() throws {
        let picked: [LifecycleCoverage.Transition] = [
            .init(state: .refreshing, event: .refreshIssued), .init(state: .expired, event: .validToken),
            .init(state: .signedOut, event: .signInSameUser),
        ]
        let original = try coverage(picked)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let data = try encoder.encode(original)
        let object = try #require(JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(Set(object.keys) == ["seen", "parkedAcrossFence", "readRightAfterFence"])
        let seen = try #require(object["seen"] as? [[String: String]])
        #expect(seen.map { $0["state"] ?? "" } == ["signed out", "expired", "refreshing"])
        #expect(try JSONDecoder().decode(LifecycleCoverage.self, from: data) == original)
    }
}
