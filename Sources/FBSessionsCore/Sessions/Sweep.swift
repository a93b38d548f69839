import Foundation

/// What the background sweep asks of storage: sessions due for a look, and revocations still owed to Facebook.
public protocol SweepStore: Sendable {
    /// Claims up to `limit` live sessions that need a look (not validated for `maxAge` seconds, token expiring
    /// within `expiryMargin` seconds, or not extended for `refreshAfter` seconds), with the same lease a status
    /// request takes, so a session is never validated twice at once across instances. Skips rows other
    /// instances hold (`FOR UPDATE SKIP LOCKED`).
    func claimDue(limit: Int, maxAge: Double, expiryMargin: Double, refreshAfter: Double, lease: Double) async throws
        -> [DueSession]

    /// Writes `session.expiring` for up to `limit` live standard sessions whose token or data access runs out
    /// within the store's warning window (`FBS_EXPIRY_WARNING`) and which were not warned about that deadline yet,
    /// and marks them warned, in one transaction. Skips rows other transactions hold (`FOR UPDATE SKIP LOCKED`):
    /// another instance or a read warns about them, or the next pass does.
    /// - Returns: how many events were written.
    func warnExpiring(limit: Int) async throws -> Int

    /// Claims up to `limit` pending revocations whose next attempt is due, pushing their next attempt back by
    /// `lease` seconds while this instance works on them.
    func claimRevocations(limit: Int, lease: Double) async throws -> [PendingRevocation]

    /// Records a failed revocation attempt; the next one waits `retryAfter` seconds.
    func revocationFailed(sessionID: String, retryAfter: Double) async throws

    /// Deletes up to `limit` Limited Login nonces that expired more than an hour ago.
    /// - Returns: how many were deleted.
    func pruneLoginNonces(limit: Int) async throws -> Int

    /// The app with this id.
    func app(id: String) async throws -> App?

    /// Deletes the audit log's entries older than `retentionDays` days (at least 1), through the one deletion path
    /// the log's trigger lets pass (``AuditLog/prune(retentionDays:)``).
    /// - Returns: how many were deleted.
    func pruneAudit(retentionDays: Int) async throws -> Int
}

/// A session claimed by the sweep, with its token.
public struct DueSession: Sendable {
    /// The session.
    public var session: Session
    /// Its decrypted token.
    public var token: String

    /// Creates a value.
    public init(session: Session, token: String) {
        self.session = session
        self.token = token
    }
}

/// A revocation still owed to Facebook.
public struct PendingRevocation: Sendable {
    /// The closed session it came from.
    public var sessionID: String
    /// Its app.
    public var appID: String
    /// The decrypted token to revoke with.
    public var token: String
    /// Attempts so far.
    public var attempts: Int
    /// The session's login kind: a `limited` one is revoked at the uninstall endpoint.
    public var loginKind: LoginKind

    /// Creates a value.
    public init(sessionID: String, appID: String, token: String, attempts: Int, loginKind: LoginKind = .standard) {
        self.sessionID = sessionID
        self.appID = appID
        self.token = token
        self.attempts = attempts
        self.loginKind = loginKind
    }
}

/// One pass of the sweep: what it did.
public struct SweepReport: Sendable, Equatable {
    /// Sessions Graph confirmed.
    public var validated = 0
    /// Tokens re-extended.
    public var extended = 0
    /// Sessions closed because Graph said the token is dead.
    public var closed = 0
    /// Sessions left for later because Graph could not be asked.
    public var deferred = 0
    /// Revocations Facebook took.
    public var revoked = 0
    /// Revocations still pending after this pass.
    public var revocationsPending = 0
    /// Limited Login revocations dropped because they can never succeed (the token expired, or Facebook refused it).
    public var revocationsUnavailable = 0
    /// `session.expiring` events written (a deadline within `FBS_EXPIRY_WARNING`, not warned about before).
    public var expiring = 0
    /// The pass ended early because most of a batch was deferred (Graph failing or rate-limiting).
    public var stoppedEarly = false
    /// Audit log entries deleted for being past retention (`FBS_AUDIT_RETENTION`).
    public var auditEntriesPruned = 0

    /// Graph could not be asked in this pass: it stopped early, or deferred sessions and confirmed or closed none.
    /// The `serve` loop waits longer before the next pass (``SweepBackoff``).
    public var graphFailing: Bool {
        stoppedEarly || (deferred > 0 && validated == 0 && closed == 0)
    }

    /// An empty report.
    public init() {}
}

/// The background sweep: keeps tokens extended, re-validates sessions nobody has looked at for long, closes dead
/// ones, warns of deadlines coming (`session.expiring`), and retries owed revocations. Paced by a rate limit on
/// sessions per second, and backs off when Graph is failing or rate-limiting, so an outage never turns into a storm
/// of calls.
public struct Sweeper: Sendable {
    /// How the sweep paces itself.
    public struct Policy: Sendable {
        /// Sessions claimed per batch.
        public var batchSize: Int = 50
        /// Most sessions looked at per second (each costs two or three Graph calls).
        public var sessionsPerSecond: Double = 20
        /// Re-validate sessions not validated for this many seconds.
        public var maxAge: Double = 86_400
        /// Extend tokens that expire within this many seconds.
        public var expiryMargin: Double = 7 * 86_400
        /// Most batches in one pass.
        public var maxBatches: Int = 100
        /// Days an audit log entry is kept (`FBS_AUDIT_RETENTION`); each pass deletes older ones.
        public var auditRetentionDays: Int = AuditPolicy.defaultRetentionDays

        /// The defaults.
        public init() {}
    }

    let service: SessionService
    let store: any SweepStore
    let policy: Policy

    /// Creates a sweeper over the service's store and Graph client.
    public init(service: SessionService, store: any SweepStore, policy: Policy = Policy()) {
        self.service = service
        self.store = store
        self.policy = policy
    }

    /// Runs one pass: batches of due sessions until none is left (or `maxBatches`), then expiry warnings, then owed
    /// revocations.
    /// Stops a pass early when most of a batch was deferred (Graph is down or rate-limiting).
    public func pass() async throws -> SweepReport {
        var report = SweepReport()
        let lease = service.policy.graphTimeout * 3 + 5
        batches: for _ in 0..<policy.maxBatches {
            let due = try await store.claimDue(
                limit: policy.batchSize, maxAge: policy.maxAge, expiryMargin: policy.expiryMargin,
                refreshAfter: service.policy.refreshAfter, lease: lease)
            if due.isEmpty { break }
            var deferredInBatch = 0
            for (index, item) in due.enumerated() {
                try Task.checkCancellation()
                let started = Date()
                guard let app = try await store.app(id: item.session.appID) else { continue }
                let nearExpiry = item.session.tokenExpiresAt.map { $0.timeIntervalSinceNow < policy.expiryMargin } ?? false
                let result = await service.askGraph(item.session, token: item.token, app: app, forceRefresh: nearExpiry)
                _ = try await service.store.finishValidation(id: item.session.id, appID: app.id, result: result)
                switch result {
                case .valid(_, _, _, _, let extended, _, _):
                    report.validated += 1
                    if extended != nil { report.extended += 1 }
                case .dataAccessExpired: report.validated += 1
                case .invalid: report.closed += 1
                case .deferred:
                    report.deferred += 1
                    deferredInBatch += 1
                }
                if deferredInBatch >= 3 && deferredInBatch * 2 > index + 1 {
                    // Graph is failing: release the rest of the batch untouched and end the pass.
                    for rest in due.dropFirst(index + 1) {
                        _ = try await service.store.finishValidation(id: rest.session.id, appID: rest.session.appID, result: .deferred)
                    }
                    report.stoppedEarly = true
                    break batches
                }
                let pace = 1 / policy.sessionsPerSecond - Date().timeIntervalSince(started)
                if pace > 0 { try await Task.sleep(nanoseconds: UInt64(pace * 1e9)) }
            }
        }
        // After the validations: a token the pass just re-extended is no longer due for a warning.
        for _ in 0..<policy.maxBatches {
            try Task.checkCancellation()
            let written = try await store.warnExpiring(limit: policy.batchSize)
            report.expiring += written
            if written < policy.batchSize { break }
        }
        for revocation in try await store.claimRevocations(limit: policy.batchSize, lease: lease) {
            guard let app = try await store.app(id: revocation.appID) else { continue }
            if revocation.loginKind == .limited {
                try await retryUninstall(revocation, app: app, report: &report)
                continue
            }
            do {
                let credentials = try await service.credentials.credentials(for: app)
                try await service.graph.revokePermissions(accessToken: revocation.token, credentials: credentials)
                try await service.store.completeRevocation(sessionID: revocation.sessionID, appID: app.id, confirmed: true)
                report.revoked += 1
            } catch let error as GraphError where error.closedReason != nil {
                // The token is dead at Facebook: nothing to retry. Done only when that is because the grant is gone.
                try await service.store.completeRevocation(
                    sessionID: revocation.sessionID, appID: app.id, confirmed: error.confirmsRevocation)
                report.revoked += 1
            } catch {
                let backoff = min(3600, 30 * pow(2, Double(min(revocation.attempts, 7))))
                try await store.revocationFailed(sessionID: revocation.sessionID, retryAfter: backoff)
                report.revocationsPending += 1
            }
        }
        // Limited Login nonces long expired (each new nonce also deletes a batch).
        _ = try? await store.pruneLoginNonces(limit: 1000)
        // The audit log past retention, through its one deletion path.
        report.auditEntriesPruned = try await store.pruneAudit(retentionDays: policy.auditRetentionDays)
        return report
    }

    /// One owed Limited Login revocation: the uninstall endpoint; dropped when it can never succeed (the token
    /// expired or Facebook refused it), retried with backoff when Facebook could not be asked.
    private func retryUninstall(_ revocation: PendingRevocation, app: App, report: inout SweepReport) async throws {
        switch await service.uninstall(token: revocation.token, app: app) {
        case .done:
            try await service.store.completeRevocation(sessionID: revocation.sessionID, appID: app.id, confirmed: true)
            report.revoked += 1
        case .unavailable:
            try await service.store.completeRevocation(
                sessionID: revocation.sessionID, appID: app.id, confirmed: false)
            report.revocationsUnavailable += 1
        case .pending:
            let backoff = min(3600, 30 * pow(2, Double(min(revocation.attempts, 7))))
            try await store.revocationFailed(sessionID: revocation.sessionID, retryAfter: backoff)
            report.revocationsPending += 1
        }
    }
}
