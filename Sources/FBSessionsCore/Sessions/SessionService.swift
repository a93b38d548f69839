import Crypto
import Foundation

/// The session use cases: login, status with validation, logout, owners' slots, and the token reveal.
///
/// Graph calls that do not depend on each other run concurrently. Validation is single-flight: within this
/// process by ``SingleFlight``, across instances by the store's validation lease, so concurrent requests for one
/// session make at most one Graph call. A transient Graph failure never closes a session.
public final class SessionService: Sendable {
    /// The knobs from settings.
    public struct Policy: Sendable {
        /// Seconds a validation stays fresh (`FBS_VALIDATE_TTL`).
        public var validateTTL: Double
        /// Seconds after which a token is re-extended (`FBS_REFRESH_AFTER`).
        public var refreshAfter: Double
        /// Accounts per owner (`FBS_MAX_SLOTS`).
        public var maxSlots: Int
        /// The Graph version for apps.
        public var graphVersion: String?
        /// Seconds per Graph call; bounds how long a waiting request follows another's validation.
        public var graphTimeout: Double
        /// Whether a token read writes a `token.read` entry to the audit log (always, but for the benchmark's
        /// baseline: `FBS_AUDIT_TOKEN_READS=off`).
        public var auditsTokenReads = true

        /// Creates a policy.
        public init(validateTTL: Double, refreshAfter: Double, maxSlots: Int, graphVersion: String?, graphTimeout: Double) {
            self.validateTTL = validateTTL
            self.refreshAfter = refreshAfter
            self.maxSlots = maxSlots
            self.graphVersion = graphVersion
            self.graphTimeout = graphTimeout
        }
    }

    /// How `GET /v1/sessions/{id}` may validate.
    public enum ValidateMode: String, Sendable, CaseIterable {
        case auto, always, never
    }

    /// How fresh the answer is: `fresh` (Graph asked now), `cached` (within the TTL, or not asked), `deferred`
    /// (Graph could not be asked).
    public enum Validation: String, Sendable {
        case fresh, cached, deferred
    }

    /// How a logout with `revoke=true` left the app's permissions at Facebook (`DELETE /me/permissions`).
    public enum Revocation: String, Sendable {
        /// Facebook confirmed it, at this logout or an earlier one of the session: its answer was a success, or
        /// the 190/458 or 190/466 that a token gets once its grant is gone.
        case done
        /// Facebook could not take it now; the token is kept (encrypted) for the background sweep to retry.
        case pending
        /// Nothing can be revoked any more: the session's token was erased before (an earlier logout without
        /// `revoke`, a close because Facebook refused the token), or Facebook refused it now for another reason.
        case unavailable
    }

    let store: any SessionStore
    let graph: any GraphAPI
    let credentials: CredentialCache
    let policy: Policy
    let flights = SingleFlight<String, (Session, Validation)?>()
    /// Limited Login's endpoints, for revoking limited sessions; nil where none is configured (such a revocation is
    /// then `unavailable`).
    let limitedLogin: (any LimitedLoginAPI)?

    /// Creates the service.
    /// - Parameters:
    ///   - store: sessions and their events.
    ///   - graph: the Graph API.
    ///   - apps: the apps and their secrets.
    ///   - policy: TTLs, slots, timeouts.
    ///   - limitedLogin: Limited Login's endpoints (the uninstall endpoint revokes limited sessions).
    public init(
        store: any SessionStore, graph: any GraphAPI, apps: any AppStore, policy: Policy,
        limitedLogin: (any LimitedLoginAPI)? = nil
    ) {
        self.store = store
        self.graph = graph
        self.credentials = CredentialCache(apps: apps, version: policy.graphVersion)
        self.policy = policy
        self.limitedLogin = limitedLogin
    }

    // MARK: Status

    /// The session as the contract shows it, validating as `mode` says.
    /// - Returns: nil when unknown to this app.
    public func status(_ id: String, app: App, mode: ValidateMode) async throws -> (Session, Validation)? {
        guard let session = try await store.session(id: id, appID: app.id) else { return nil }
        if let answer = answerWithoutGraph(session, mode: mode) { return answer }
        let staleAfter = mode == .always ? 0 : policy.validateTTL
        return try await flights.run(key: "\(id)|\(mode.rawValue)") {
            try await self.validate(id, app: app, staleAfter: staleAfter)
        }
    }

    /// Reads the session (through the exact cache when there is one, which then keeps it), ignoring the answer and
    /// any failure.
    func warm(_ id: String, app: App) async {
        _ = try? await store.session(id: id, appID: app.id)
    }

    /// The state a session is shown in when `mode` needs no call to Graph for it now (the answer's validation is
    /// then `cached`), else nil. A pure rule of the domain: the fast path answers a cached status with it, from the
    /// few fields that decide it (``Standing``).
    public func stateWithoutGraph(_ standing: Standing, mode: ValidateMode, now: Date) -> SessionState? {
        guard answersWithoutGraph(standing, mode: mode, now: now) else { return nil }
        return shownState(of: standing, now: now)
    }

    /// The answer when `mode` needs no call to Graph for this session, else nil.
    private func answerWithoutGraph(_ session: Session, mode: ValidateMode) -> (Session, Validation)? {
        let now = Date()
        guard answersWithoutGraph(Standing(session), mode: mode, now: now) else { return nil }
        return (present(session, now: now), .cached)
    }

    /// Whether `mode` needs no call to Graph for this session now.
    private func answersWithoutGraph(_ standing: Standing, mode: ValidateMode, now: Date) -> Bool {
        // A Limited Login token cannot be shown to Graph: such a session is never validated, whatever `mode` says.
        standing.state == .closed || standing.loginKind == .limited || mode == .never
            || (mode == .auto && isFresh(validatedAt: standing.validatedAt, now: now))
    }

    private func validate(_ id: String, app: App, staleAfter: Double) async throws -> (Session, Validation)? {
        let lease = policy.graphTimeout * 3 + 5
        switch try await store.claimValidation(id: id, appID: app.id, staleAfter: staleAfter, lease: lease) {
        case .notFound:
            return nil
        case .settled(let session):
            return (present(session, now: Date()), .cached)
        case .busy(let session):
            return try await followOther(session, app: app, waitLimit: lease)
        case .claimed(let session, let token):
            let result = await askGraph(session, token: token, app: app)
            guard let updated = try await store.finishValidation(id: id, appID: app.id, result: result) else {
                return nil
            }
            if case .deferred = result { return (present(updated, now: Date()), .deferred) }
            return (present(updated, now: Date()), .fresh)
        }
    }

    /// Waits for another request's validation of the same session (possibly on another instance) by re-reading.
    ///
    /// It polls the lease rather than the row: an attempt that Graph could not answer releases the lease without
    /// changing the row, and the follower must then answer `deferred` at once instead of waiting out the whole
    /// limit (which made every concurrent status request during an outage take the timeout plus 2 s).
    private func followOther(_ session: Session, app: App, waitLimit: Double) async throws -> (Session, Validation)? {
        let deadline = Date().addingTimeInterval(min(waitLimit, policy.graphTimeout + 2))
        let changed = { (current: Session) in
            current.validatedAt != session.validatedAt || current.state == .closed
                || current.storedAction != session.storedAction
        }
        while Date() < deadline {
            try await Task.sleep(nanoseconds: 25_000_000)
            // A staleness bound no row meets: this never claims a validated session, it only reports the lease.
            switch try await store.claimValidation(id: session.id, appID: app.id, staleAfter: Self.never, lease: waitLimit) {
            case .notFound:
                return nil
            case .busy(let current):
                if changed(current) { return (present(current, now: Date()), .fresh) }
            case .settled(let current):
                return (present(current, now: Date()), changed(current) ? .fresh : .deferred)
            case .claimed(let current, let token):
                // Only a session never validated at all can be claimed here; validate it like `validate` does.
                let result = await askGraph(current, token: token, app: app)
                guard let updated = try await store.finishValidation(id: current.id, appID: app.id, result: result)
                else { return nil }
                if case .deferred = result { return (present(updated, now: Date()), .deferred) }
                return (present(updated, now: Date()), .fresh)
            }
        }
        return (present(session, now: Date()), .deferred)
    }

    /// Ten years: a staleness bound for ``SessionStore/claimValidation(id:appID:staleAfter:lease:)`` that reads
    /// the lease without claiming.
    static let never: Double = 10 * 365 * 86_400

    /// Asks Graph about a stored token: the profile and permissions, and a re-extension when the token is old.
    func askGraph(_ session: Session, token: String, app: App, forceRefresh: Bool = false) async -> ValidationResult {
        let credentials: GraphCredentials
        do {
            credentials = try await self.credentials.credentials(for: app)
        } catch {
            return .deferred
        }
        let needsRefresh = forceRefresh
            || (session.tokenRefreshedAt.map { Date().timeIntervalSince($0) >= policy.refreshAfter } ?? true)
        async let profileCall = capture { try await graph.me(fields: GraphProfile.defaultFields, accessToken: token, credentials: credentials) }
        async let permissionsCall = capture { try await graph.permissions(accessToken: token, credentials: credentials) }
        async let extensionCall: Result<GraphTokenGrant, any Error>? =
            needsRefresh ? capture { try await graph.exchangeForLongLivedToken(accessToken: token, credentials: credentials) } : nil
        let (profileResult, permissionsResult, extensionResult) = await (profileCall, permissionsCall, extensionCall)

        switch profileResult {
        case .failure(let error as GraphError):
            switch error {
            case .invalidToken(let reason, _): return .invalid(reason)
            case .dataAccessExpired: return .dataAccessExpired
            default: return .deferred
            }
        case .failure:
            return .deferred
        case .success(let profile):
            let permissions = try? permissionsResult.get()
            var expiresAt = session.tokenExpiresAt
            var extended: String?
            if case .success(let grant)? = extensionResult {
                extended = grant.accessToken
                expiresAt = grant.expiresAt(from: Date())
            }
            let needed = Self.actionNeeded(permissions: permissions, required: app.requiredPermissions)
            return .valid(
                tokenExpiresAt: expiresAt, dataAccessExpiresAt: session.dataAccessExpiresAt, permissions: permissions,
                profile: Profile(profile), extendedToken: extended, action: needed?.action, actionReason: needed?.reason)
        }
    }

    /// `rerequest` when a permission the app requires is declined or missing.
    static func action(permissions: GraphPermissions?, required: [String]) -> ActionRequired? {
        actionNeeded(permissions: permissions, required: required)?.action
    }

    /// `rerequest` and why, when a permission the app requires is not granted: `permission_declined` when one of
    /// them was declined, else `permission_expired` when one expired, else `permission_missing`. Nil when Graph's
    /// permissions are not known (nothing is concluded then) or every required one is granted.
    static func actionNeeded(permissions: GraphPermissions?, required: [String])
        -> (action: ActionRequired, reason: ActionReason)?
    {
        guard let permissions else { return nil }
        let missing = required.filter { !permissions.granted.contains($0) }
        guard !missing.isEmpty else { return nil }
        if missing.contains(where: permissions.declined.contains) { return (.rerequest, .permissionDeclined) }
        if missing.contains(where: permissions.expired.contains) { return (.rerequest, .permissionExpired) }
        return (.rerequest, .permissionMissing)
    }

    func isFresh(_ session: Session, now: Date) -> Bool {
        isFresh(validatedAt: session.validatedAt, now: now)
    }

    private func isFresh(validatedAt: Date?, now: Date) -> Bool {
        guard let validatedAt else { return false }
        return now.timeIntervalSince(validatedAt) < policy.validateTTL
    }

    /// The state the contract shows: `open` within the TTL (and not awaiting reauthorization), else `token_loaded`;
    /// a Limited Login session is `open` until it closes (nothing can validate it again).
    /// Changes nothing but the state: a body rendered from a stored session in some state can be reused for that
    /// session in that state.
    func present(_ session: Session, now: Date) -> Session {
        var shown = session
        shown.state = shownState(of: session, now: now)
        return shown
    }

    /// The state ``present(_:now:)`` gives the session.
    func shownState(of session: Session, now: Date) -> SessionState {
        shownState(of: Standing(session), now: now)
    }

    func shownState(of standing: Standing, now: Date) -> SessionState {
        if standing.state == .closed { return .closed }
        if standing.loginKind == .limited { return .open }
        return isFresh(validatedAt: standing.validatedAt, now: now) && standing.storedAction != .reauthorize
            ? .open : .tokenLoaded
    }

    /// The fields of a session that decide the state it is shown in and whether an answer needs Graph, all plain
    /// values, read one by one: a copy of the whole `Session` would retain each of its strings and arrays.
    public struct Standing: Sendable {
        let state: SessionState
        let loginKind: LoginKind
        let validatedAt: Date?
        let storedAction: ActionRequired?

        /// The fields, read from a session one by one.
        public init(state: SessionState, loginKind: LoginKind, validatedAt: Date?, storedAction: ActionRequired?) {
            self.state = state
            self.loginKind = loginKind
            self.validatedAt = validatedAt
            self.storedAction = storedAction
        }

        init(_ session: Session) {
            state = session.state
            loginKind = session.loginKind
            validatedAt = session.validatedAt
            storedAction = session.storedAction
        }
    }
}

/// Runs a throwing call and keeps its outcome, so concurrent calls can be awaited together.
func capture<T: Sendable>(_ call: @Sendable () async throws -> T) async -> Result<T, any Error> {
    do {
        return .success(try await call())
    } catch {
        return .failure(error)
    }
}

extension Result {
    /// The error of a failure, nil for a success.
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
