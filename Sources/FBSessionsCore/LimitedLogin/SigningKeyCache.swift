import Crypto
import Foundation
import Support

/// Limited Login's signing keys, cached as the contract says:
///
/// - kept for the key set's `Cache-Control: max-age` (an hour when it names none; never more than a day);
/// - a `kid` the cache does not know triggers a refetch, at most one a minute whatever the `kid` (one budget for
///   all; a failed fetch spends it too), so a stream of tokens with made-up `kid`s costs Facebook one call a minute;
/// - concurrent misses share one fetch;
/// - a failed (re)fetch keeps the keys already known; a key past its max-age is still served while the refresh
///   runs in the background (one per budget period), so an outage of the key set costs no login whose key is
///   known;
/// - with no key for the `kid` and no way to get one (the last fetch failed and the budget is spent), the answer
///   is ``SigningKeyError/unavailable(retryAfter:)``: 503 `graph_unavailable` with `Retry-After`.
///
/// A successful fetch replaces the whole set: a key Facebook dropped stops working at the next fetch.
///
/// Thread safety: all state sits behind one lock; the fetch itself runs outside it, in one unstructured task that
/// every waiter awaits (a waiter's cancellation does not cancel the fetch).
public final class SigningKeyCache: Sendable {
    /// The knobs (the contract's values by default).
    public struct Policy: Sendable {
        /// Seconds a set is kept when its answer names no max-age. Default 3600.
        public var defaultMaxAge: Double = 3600
        /// The longest max-age honoured. Default 86400.
        public var longestMaxAge: Double = 86_400
        /// Seconds between fetches caused by an unknown `kid` or a stale set. Default 60.
        public var refetchInterval: Double = 60

        /// The defaults.
        public init() {}
    }

    private struct State {
        var keys: [String: RSAPublicKey] = [:]
        var expiresAt: Date?
        var lastAttempt: Date?
        var lastAttemptFailed = false
        var inflight: Task<Void, Never>?
        var fetches = 0
    }

    private let source: any LimitedLoginAPI
    private let policy: Policy
    private let clock: @Sendable () -> Date
    private let state = Locked(State())

    /// Creates an empty cache.
    /// - Parameters:
    ///   - source: where the key set is fetched.
    ///   - policy: max-age defaults and the refetch budget.
    ///   - clock: the current time (tests move it).
    public init(source: any LimitedLoginAPI, policy: Policy = Policy(), clock: @escaping @Sendable () -> Date = Date.init) {
        self.source = source
        self.policy = policy
        self.clock = clock
    }

    /// How many fetches were started (diagnostics and tests).
    public var fetchCount: Int {
        state.withLock { $0.fetches }
    }

    /// The key for `kid`.
    /// - Returns: the key, or nil when the key set (fetched successfully, as recently as the budget allows) does not
    ///   hold it: the token names an unknown key.
    /// - Throws: ``SigningKeyError/unavailable(retryAfter:)`` when no key for `kid` is known and the key set could
    ///   not be had.
    public func key(for kid: String) async throws -> RSAPublicKey? {
        var waited = false
        while true {
            let step: Step = state.withLock { next(&$0, for: kid, mayFetch: !waited) }
            switch step {
            case .found(let key):
                return key
            case .unknown:
                return nil
            case .unavailable(let retryAfter):
                throw SigningKeyError.unavailable(retryAfter: retryAfter)
            case .wait(let task):
                await task.value
                waited = true
            }
        }
    }

    private enum Step {
        case found(RSAPublicKey)
        case unknown
        case unavailable(retryAfter: Int)
        case wait(Task<Void, Never>)
    }

    /// Decides under the lock (`state` is the locked state); starts a fetch when one is due. `mayFetch` is false
    /// after this caller already waited for a fetch, so one call starts at most one.
    private func next(_ state: inout State, for kid: String, mayFetch: Bool) -> Step {
        let now = clock()
        let budgetAllows = state.lastAttempt.map { now.timeIntervalSince($0) >= policy.refetchInterval } ?? true
        if let key = state.keys[kid] {
            if let expiresAt = state.expiresAt, now >= expiresAt, budgetAllows, state.inflight == nil {
                // Refresh in the background; the known key serves meanwhile.
                let task = startFetch(&state, at: now)
                state.inflight = task
            }
            return .found(key)
        }
        if let inflight = state.inflight, mayFetch {
            return .wait(inflight)
        }
        if budgetAllows, mayFetch {
            let task = startFetch(&state, at: now)
            state.inflight = task
            return .wait(task)
        }
        if let inflight = state.inflight {
            return .wait(inflight)
        }
        guard state.lastAttemptFailed else { return .unknown }
        let elapsed = state.lastAttempt.map { now.timeIntervalSince($0) } ?? 0
        return .unavailable(retryAfter: max(1, Int((policy.refetchInterval - elapsed).rounded(.up))))
    }

    /// Starts one fetch (the caller holds the lock, passes the locked `state` and stores the task in it).
    private func startFetch(_ state: inout State, at now: Date) -> Task<Void, Never> {
        state.lastAttempt = now
        state.fetches += 1
        let source = self.source
        return Task { [self] in
            let result: SigningKeyFetch?
            do {
                result = try await source.signingKeys()
            } catch {
                result = nil
            }
            finish(result)
        }
    }

    private func finish(_ result: SigningKeyFetch?) {
        state.withLock { state in
            state.inflight = nil
            guard let result else {
                state.lastAttemptFailed = true
                return
            }
            let maxAge = min(max(0, result.maxAge ?? policy.defaultMaxAge), policy.longestMaxAge)
            state.keys = result.keys.keys
            state.expiresAt = clock().addingTimeInterval(maxAge)
            state.lastAttemptFailed = false
        }
    }
}

/// Why no signing key could be had.
public enum SigningKeyError: Error, Sendable, Equatable {
    /// The key set is unreachable and no key for the token's `kid` is cached; try again after `retryAfter` seconds.
    case unavailable(retryAfter: Int)
}
