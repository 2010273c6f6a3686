import SessionContract
import TokenServer

/// The storage promises, judged at every round event for a store that keeps its session.
extension ContractJudge {
    /// A store that keeps its session in a storage (`TokenStorage`) saves every grant before any
    /// caller gets its token, and clears it when the session ends, with no save of the ended
    /// session after: judged over `writes` (every save and clear of `account`'s storage, with when)
    /// for the calls of this batch (I15), the writes not judged yet (I16), and what the storage
    /// holds at `instant`, with nothing under way (I16, I15).
    package mutating func judgeStorage(
        saved: UInt64?, writes: [StorageWrite], account: Int, calls: [ObservedCall], timeline: SessionTimeline,
        at instant: Int64, report: (Finding) -> Void
    ) {
        func family(_ generation: UInt64) -> UInt64? { timeline.issued[generation]?.family }
        // Persist before publish: a save of this generation, or a newer one of its session, before
        // the call that got it returned.
        for call in calls where call.account == account {
            guard let token = call.token, let owner = family(token.generation) else { continue }
            let persisted = writes.contains {
                $0.at <= call.endedNanos
                    && ($0.generation.map { $0 >= token.generation && family($0) == owner } ?? false)
            }
            if !persisted {
                report(
                    Finding(
                        invariant: .durableRotation,
                        summary:
                            "\(call.who) was handed generation \(token.generation) before the store saved it",
                        trace: [
                            "the storage's last writes before the call returned: "
                                + (["none"]
                                + writes.filter { $0.at <= call.endedNanos }.suffix(3).map {
                                    $0.generation.map { "save of generation \($0)" } ?? "clear"
                                }).suffix(3).joined(separator: ", ")
                        ]))
                break
            }
        }
        let start = writesJudged[account] ?? 0
        // Persist before publish, seen from the store's side: its synchronous read already
        // answered with the generation (or a newer one of its session) while the save was under way.
        for write in writes.dropFirst(start) {
            guard let saving = write.generation, let seen = write.seenWhileSaving, seen >= saving,
                let owner = family(saving), family(seen) == owner
            else { continue }
            report(
                Finding(
                    invariant: .durableRotation,
                    summary:
                        "the store's currentToken() answered with generation \(seen) while its save of generation \(saving) was still under way: the token was out before it was saved",
                    trace: [
                        "read from a harness thread during the save, which ended at \(relative(write.at, timeline))"
                    ]))
            break
        }
        // A grant is saved whole: its refresh token is the one the server issued with its access
        // token. Another grant's (an older one the server has since rotated away) or one the server
        // never issued leaves a storage that a restart cannot refresh from.
        for write in writes.dropFirst(start) {
            guard let saving = write.generation,
                write.refreshUnknown || (write.refreshIssuedWith.map { $0 != saving } ?? false)
            else { continue }
            report(
                Finding(
                    invariant: .durableRotation,
                    summary: write.refreshUnknown
                        ? "the store saved generation \(saving) beside a refresh token the server never issued"
                        : "the store saved generation \(saving) beside the refresh token issued with generation \(write.refreshIssuedWith!): a restart would present a refresh token of another grant",
                    trace: ["the save ended at \(relative(write.at, timeline))"]))
            break
        }
        // No save of a session after its end returned.
        writesJudged[account] = writes.count
        for write in writes.dropFirst(start) {
            guard let generation = write.generation, let owner = family(generation),
                let session = timeline.sessions[owner], let ended = session.ended, write.at > ended.returnedNanos
            else { continue }
            report(
                Finding(
                    invariant: .signOutDurable,
                    summary:
                        "the store saved generation \(generation) of a session after \(ended.isSignIn ? "a sign-in" : "the sign-out") that ended it returned",
                    trace: [
                        "family \(owner) ended at \(relative(ended.returnedNanos, timeline)); the save came at \(relative(write.at, timeline))"
                    ]))
            break
        }
        // A sign-out, and the start of a sign-in, clear a storage that holds a session: a crash
        // after them must not bring the ended session back.
        let ends = timeline.events(of: account).filter { $0.returnedNanos < instant }
        for end in ends.dropFirst(endsJudged[account] ?? 0) {
            // What it left: by the time it returned, the storage's last write is its clear (or, for a
            // sign-in, its own session's save), never a save of a session over by then — one that
            // landed between the fence's clear and its return.
            if let last = writes.last(where: { $0.at <= end.returnedNanos }), let generation = last.generation,
                let owner = family(generation), owner != end.family,
                let over = timeline.sessions[owner]?.ended, over.returnedNanos <= end.returnedNanos
            {
                report(
                    Finding(
                        invariant: .signOutDurable,
                        summary:
                            "the \(end.isSignIn ? "sign-in" : "sign-out") returned with generation \(generation) of the session it ended in the storage: a save landed after its clear",
                        trace: [
                            "the save came at \(relative(last.at, timeline)); the \(end.isSignIn ? "sign-in" : "sign-out") ran from \(relative(end.startedNanos, timeline)) to \(relative(end.returnedNanos, timeline))"
                        ]))
                break
            }
            let before = writes.last { $0.at < end.startedNanos }
            guard before?.generation != nil else { continue }  // nothing saved: nothing to clear
            let cleared = writes.contains {
                $0.generation == nil && $0.at >= end.startedNanos && $0.at <= end.returnedNanos
            }
            if !cleared {
                report(
                    Finding(
                        invariant: .signOutDurable,
                        summary:
                            "the storage was not cleared by the \(end.isSignIn ? "sign-in" : "sign-out"): it held generation \(before!.generation!) of the session that ended",
                        trace: [
                            "the \(end.isSignIn ? "sign-in" : "sign-out") ran from \(relative(end.startedNanos, timeline)) to \(relative(end.returnedNanos, timeline)) with no clear of the storage"
                        ]))
                break
            }
        }
        endsJudged[account] = ends.count
        // What it holds now, with nothing under way: nothing after a sign-out, the session's newest.
        let current = timeline.current(account: account, at: instant)
        if current.families.isEmpty, let saved {
            report(
                Finding(
                    invariant: .signOutDurable,
                    summary: "the storage still holds generation \(saved) with nobody signed in",
                    trace: ["the account's last sign-in or sign-out left no session; the storage was not cleared"]))
        } else if current.families.count == 1, let owner = current.families.first,
            timeline.sessions[owner]?.refusedAt == nil,
            let handed = watermark.highest(family: owner, endedBefore: instant)
        {
            if saved.flatMap(family) != owner || (saved ?? 0) < handed.generation {
                report(
                    Finding(
                        invariant: .durableRotation,
                        summary:
                            "the storage holds \(saved.map { "generation \($0)" } ?? "nothing") while generation \(handed.generation) of the session was handed out",
                        trace: ["\(handed.phase): caller \(handed.caller) got generation \(handed.generation)"]))
            }
        }
    }
}
