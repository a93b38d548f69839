import Foundation

extension LoginFlow {
    /// What a code login asks for: `POST /v1/sessions` with `code` and `state`.
    public struct CodeLogin: Sendable {
        /// The owner; must be the one the state was issued for.
        public var owner: String
        /// The `code` from the dialog's redirect.
        public var code: String
        /// The `state` from the dialog's redirect.
        public var state: String
        /// A slot; when the login URL named one, it must be the same (or absent).
        public var slot: Int?
        /// Whether the session becomes the owner's active one.
        public var activate: Bool

        /// Creates a request.
        public init(owner: String, code: String, state: String, slot: Int?, activate: Bool) {
            self.owner = owner
            self.code = code
            self.state = state
            self.slot = slot
            self.activate = activate
        }
    }

    /// Logs in with the dialog's code: uses the state once (checking app, owner and expiry), exchanges the code
    /// with the state's redirect URI, then continues exactly as a token login
    /// (``SessionService/login(app:owner:accessToken:slot:activate:)``).
    ///
    /// When the state asked for `reauthenticate` (adding an account), the token is first inspected with
    /// `debug_token`: an `auth_nonce` other than the URL's is refused, and a Facebook user who already has a live
    /// session for this owner gives ``LoginFlowError/alreadyLinked(sessionID:slot:)`` and changes nothing.
    ///
    /// The state is used up even when the login fails later, except when the code exchange itself failed in a
    /// retryable way (Graph unreachable or throttling): then the state is released so that the same code and state
    /// may be sent again.
    /// - Throws: ``LoginFlowError``, `GraphError`, ``LoginError``, ``SessionError/slotsFull(_:)``.
    public func login(app: App, _ request: CodeLogin) async throws -> StoredLogin {
        guard Self.isWellFormedState(request.state) else { throw LoginFlowError.invalidState }
        let credentials = try await sessions.credentials.credentials(for: app)
        let hash = Self.hash(request.state)
        let state: LoginState
        switch try await states.consumeState(hash: hash, appID: app.id, owner: request.owner) {
        case .consumed(let consumed): state = consumed
        case .unknown: throw LoginFlowError.invalidState
        case .used: throw LoginFlowError.stateUsed
        case .expired: throw LoginFlowError.stateExpired
        case .otherOwner: throw LoginFlowError.stateOwnerMismatch
        }
        let bound = state.draft
        if let slot = bound.slot, let asked = request.slot, asked != slot {
            try await states.releaseState(hash: hash, appID: app.id)
            throw LoginFlowError.slotMismatch(bound: slot)
        }

        let grant: GraphTokenGrant
        do {
            grant = try await sessions.graph.exchangeCode(
                code: request.code, redirectURI: bound.redirectURI, credentials: credentials)
        } catch let error as GraphError {
            if error.isRetryable {
                try? await states.releaseState(hash: hash, appID: app.id)
            }
            // Code 100 is Graph's answer to a used, expired, malformed or mismatched code (docs/facebook-graph.md
            // §4.2).
            if case .other(let detail) = error, detail.code == 100 { throw LoginFlowError.codeRejected(detail) }
            throw error
        }

        if bound.authType == .reauthenticate {
            let info = try await sessions.graph.debugToken(inputToken: grant.accessToken, credentials: credentials)
            if let failure = info.failure(now: Date()) { throw failure }
            // The same verdict order as a token login: another app's token, then a token that is not a person's,
            // before the account check could name anyone's session.
            guard info.isIssued(forApp: app.facebookAppID) else { throw LoginError.tokenForAnotherApp }
            guard info.isUserToken else { throw LoginError.notAUserToken(type: info.type, graph: nil) }
            if let expected = bound.authNonce, let echoed = info.metadata["auth_nonce"], echoed != expected {
                throw LoginFlowError.reauthenticationUnconfirmed
            }
            if let userID = info.userID,
                let linked = try await sessions.store.sessions(owner: request.owner, appID: app.id)
                    .first(where: { $0.facebookUserID == userID })
            {
                throw LoginFlowError.alreadyLinked(sessionID: linked.id, slot: linked.slot)
            }
        }
        return try await sessions.login(
            app: app, owner: request.owner, accessToken: grant.accessToken, slot: request.slot ?? bound.slot,
            activate: request.activate)
    }
}
