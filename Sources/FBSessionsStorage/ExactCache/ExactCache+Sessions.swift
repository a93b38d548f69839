import Crypto
import Dispatch
import FBSessionsCore
import Foundation
import Postgres
import Support
import Synchronization

/// Sessions: held shared (``HeldSession``) with the body last rendered from them, found through a hint with no lock
/// when the entry was not withdrawn since.
extension ExactCache {
    /// Where the session is held, and its entry, without a fence and without counting a hit or a miss; nil when it is
    /// not held. A hint for the request path (a request that would miss need not wait for a fence first, and one that
    /// waits takes the entry after the fence without searching again), never an answer by itself. It counts as a use
    /// of the entry for eviction, since the read after the fence may take no lock.
    public func sessionHint(_ id: String) -> CacheHint? {
        guarded.withLock { state in
            guard let (position, entry) = state.entries.entry(for: id), case .session(let held) = entry else { return nil }
            return CacheHint(position: position, held: held)
        }
    }

    /// The cached session, if any (call after ``fence()`` returned true).
    public func session(id: String, appID: String) -> Session? {
        session(id: id, appID: appID, hint: .unknown)?.session
    }

    /// The cached session, shared, and the body last rendered from it, if any (call after ``fence()`` returned
    /// true): the hint's entry when it has not been withdrawn since (``HeldSession``), with no lock and no search;
    /// else looked for first where `hint` says (``sessionHint(_:)``).
    public func session(id: String, appID: String, hint: CacheHint) -> HeldSession? {
        if let held = hint.held, !held.isWithdrawn, held.session.id == id, held.session.appID == appID {
            unlockedHits.add(1, ordering: .relaxed)
            return held
        }
        return guarded.withLock { state in
            guard case .session(let held) = state.entries.value(for: id, near: hint.position), held.session.appID == appID
            else {
                state.statistics.misses += 1
                return nil
            }
            state.statistics.hits += 1
            return held
        }
    }

    /// Keeps a body rendered from `held` beside it, counted in the cache's bytes, if the cache still holds that very
    /// entry: an entry changed or dropped meanwhile keeps nothing. The session and the body replace `held` (which is
    /// withdrawn) in a new entry; the body replaces any kept before.
    public func keepRendered(_ rendered: RenderedBody, from held: HeldSession) {
        guarded.withLock { state in
            let size = Self.estimatedBytes(of: held.session) + Self.renderedOverhead + rendered.body.count
            _ = state.entries.update(held.session.id, bytes: size) { entry in
                guard case .session(let current) = entry, current === held else { return false }
                entry = .session(HeldSession(held.session, rendered: rendered))
                return true
            }
        }
    }

    /// What a kept body takes beside its bytes: the array's header and the allocator's overhead.
    static let renderedOverhead = 64

    /// Keeps a session read from the database, unless something about it was announced since `mark`.
    func fill(_ session: Session, since mark: InvalidationLog.Mark) {
        var kept = session
        kept.appID = sharedAppID(session.appID)
        keep(
            .session(HeldSession(kept)), for: session.id, announcedAs: Self.sessionKey(session.id),
            bytes: Self.estimatedBytes(of: session), since: mark)
    }

    /// One string per app id for every session kept: a hit compares the session's app id with the caller's, and an
    /// id longer than 15 bytes lives in a buffer of its own, which for each of thousands of sessions would be a load
    /// from memory the processor has not cached. Shared, it is one buffer read on every hit. Bounded: apps are few,
    /// and the table empties past 1,024 ids.
    func sharedAppID(_ appID: String) -> String {
        appIDs.withLock { appIDs in
            if let shared = appIDs[appID] { return shared }
            if appIDs.count >= 1024 { appIDs.removeAll() }
            appIDs[appID] = appID
            return appID
        }
    }

    /// An estimate of what a session takes in memory: its strings and arrays, and a fixed part for the rest (the
    /// struct, the dictionary slot, the key, allocator overhead). The fixed part is calibrated on the bench's
    /// sessions: 27,578 of them counted 1.2 KB each with a 640-byte fixed part, while the process grew by 2.1 KB
    /// per entry (`bench/run`, "resident memory, idle after the status rows"), so it is 1,536 bytes.
    static func estimatedBytes(of session: Session) -> Int {
        var bytes = 1536 + session.id.utf8.count * 2 + session.appID.utf8.count + session.owner.utf8.count
            + session.facebookUserID.utf8.count
        for list in [session.permissions, session.declinedPermissions, session.expiredPermissions] {
            bytes += list.reduce(list.count * 24) { $0 + $1.utf8.count }
        }
        for scope in session.granularScopes {
            bytes += 40 + scope.scope.utf8.count + (scope.targetIDs ?? []).reduce(0) { $0 + 24 + $1.utf8.count }
        }
        if let profile = session.profile {
            for field in Profile.Field.allCases {
                bytes += 16 + (profile[field]?.utf8.count ?? 0)
            }
        }
        return bytes
    }
}
