/// Issuing, finding, checking and invalidating tokens and codes.
extension EmulatorStore {
    /// Issues a user or Page token and records the user's grant to the app.
    mutating func issueUserToken(
        appID: String, userID: String, kind: TokenKind = .user, longLived: Bool, expiresIn: Int64?,
        dataAccessExpiresIn: Int64?, granted: [String], declined: [String], expired: [String],
        pageID: String? = nil, pageName: String? = nil, metadata: [(String, String)] = [],
        targets: [String: [String]] = [:]
    ) throws -> TokenRecord {
        _ = try app(appID)
        _ = try user(userID)
        if let expiresIn, expiresIn < 0 { throw EmulatorError("expires_in must be 0 (never) or more") }
        let now = self.now
        let lifetime = expiresIn ?? (longLived ? configuration.longLivedLifetime : configuration.shortLivedLifetime)
        let permissions = Self.normalized(granted: granted, declined: declined, expired: expired)
        let record = TokenRecord(
            string: freshToken(), appID: appID, userID: userID, kind: kind, issuedAt: now,
            expiresAt: lifetime == 0 ? 0 : now + lifetime,
            dataAccessExpiresAt: now + (dataAccessExpiresIn ?? configuration.dataAccessLifetime),
            isLongLived: longLived, granted: permissions.granted, declined: permissions.declined,
            expired: permissions.expired, pageID: pageID, pageName: pageName, metadata: metadata,
            targets: targets.filter { permissions.granted.contains($0.key) })
        tokens[record.string] = record
        grants[GrantKey(appID: appID, userID: userID)] = permissions
        SecretLedger.noteToken(record.string, appSecret: apps[appID]?.secret)
        return record
    }

    /// The app token `client_credentials` hands out for `appID`.
    func appToken(for appID: String) throws -> TokenRecord {
        let app = try self.app(appID)
        return TokenRecord(
            string: app.id + "|" + (appTokenSuffixes[app.id] ?? app.secret), appID: app.id, userID: nil, kind: .app,
            issuedAt: now, expiresAt: 0, dataAccessExpiresAt: 0, isLongLived: true, granted: [], declined: [],
            expired: [])
    }

    /// `public_profile` is always granted; a permission is in one list only.
    static func normalized(granted: [String], declined: [String], expired: [String]) -> Grant {
        var seen: Set<String> = []
        func unique(_ list: [String]) -> [String] {
            list.filter { !$0.isEmpty && seen.insert($0).inserted }
        }
        let granted = unique(["public_profile"] + granted)
        return Grant(granted: granted, declined: unique(declined), expired: unique(expired))
    }

    private func freshToken() -> String {
        while true {
            let candidate = RandomText.userToken()
            if tokens[candidate] == nil { return candidate }
        }
    }

    // MARK: Resolving a request's token

    /// Identifies the token string a request carries.
    func resolve(_ string: String) -> TokenResolution {
        if let bar = string.firstIndex(of: "|") {
            let appID = String(string[..<bar])
            let rest = String(string[string.index(after: bar)...])
            guard RandomText.isNumeric(appID) else { return .failed(.unparseableToken) }
            guard let app = apps[appID] else { return .failed(.badAppTokenSignature) }
            if rest == app.secret || rest == appTokenSuffixes[appID] { return .app(app) }
            if rest == app.clientToken { return .client(app) }
            return .failed(.badAppTokenSignature)
        }
        if let record = tokens[string] { return .token(record) }
        return .failed(RandomText.looksLikeToken(string) ? .undecryptableToken : .unparseableToken)
    }

    /// The error a call with user or Page token `record` gets now, if any. `needsData` adds the data-access check
    /// (every user-data read; not the permissions edge or pictures).
    func failure(of record: TokenRecord, needsData: Bool) -> GraphError? {
        let now = self.now
        if let reason = record.failure(now: now) { return .invalidated(reason, token: record, now: now) }
        if needsData && record.dataAccessExpired(now: now) {
            return .invalidated(.dataAccessExpired, token: record, now: now)
        }
        return nil
    }

    // MARK: Changing tokens

    /// Invalidates one token.
    mutating func invalidate(_ string: String, reason: TokenInvalidation) throws -> TokenRecord {
        guard var record = tokens[string] else { throw EmulatorError("no such token") }
        let now = self.now
        switch reason {
        case .expired:
            if record.expiresAt == 0 || record.expiresAt > now { record.expiresAt = now }
            record.invalidation = .expired
        case .dataAccessExpired:
            if record.dataAccessExpiresAt > now { record.dataAccessExpiresAt = now }
        default:
            record.invalidation = reason
        }
        tokens[string] = record
        return record
    }

    /// Invalidates every user and Page token of `userID` (for `appID`, or every app). Returns how many.
    mutating func invalidateAll(userID: String, appID: String?, reason: TokenInvalidation) -> Int {
        let matching = tokens.values.filter { $0.userID == userID && (appID == nil || $0.appID == appID) }
        for record in matching {
            _ = try? invalidate(record.string, reason: reason)
        }
        return matching.count
    }

    /// `DELETE /{id}/permissions`: every token of the user for the app stops working (458) and the grant is gone.
    mutating func revokeAll(appID: String, userID: String) {
        _ = invalidateAll(userID: userID, appID: appID, reason: .appNotInstalled)
        grants[GrantKey(appID: appID, userID: userID)] = nil
    }

    /// `DELETE /{id}/permissions/{permission}`: the permission becomes declined in the grant and every token.
    mutating func revoke(_ permission: String, appID: String, userID: String) {
        for (string, var record) in tokens where record.appID == appID && record.userID == userID {
            record.revoke(permission)
            tokens[string] = record
        }
        if var grant = grants[GrantKey(appID: appID, userID: userID)] {
            grant.granted.removeAll { $0 == permission }
            grant.expired.removeAll { $0 == permission }
            if !grant.declined.contains(permission) { grant.declined.append(permission) }
            grants[GrantKey(appID: appID, userID: userID)] = grant
        }
    }

    /// `auth_type=reauthorize`: data access is renewed for 90 days and expired permissions are granted again, for
    /// the grant and every working token of the user for the app.
    mutating func renewDataAccess(appID: String, userID: String) {
        let now = self.now
        for (string, var record) in tokens where record.appID == appID && record.userID == userID {
            guard record.failure(now: now) == nil else { continue }
            record.dataAccessExpiresAt = now + configuration.dataAccessLifetime
            record.granted += record.expired.filter { !record.granted.contains($0) }
            record.expired = []
            tokens[string] = record
        }
    }

    /// A new long-lived token for the same user, app and permissions (`fb_exchange_token`); the old one stays.
    mutating func exchangeForLongLived(_ record: TokenRecord) -> TokenRecord {
        var fresh = record
        fresh.string = freshToken()
        fresh.issuedAt = now
        fresh.expiresAt = now + configuration.longLivedLifetime
        fresh.isLongLived = true
        fresh.metadata = []
        tokens[fresh.string] = fresh
        SecretLedger.noteToken(fresh.string, appSecret: apps[record.appID]?.secret)
        return fresh
    }

    /// The permission lists that apply to `userID` for `appID`: the token's own when given, else the grant.
    func permissions(appID: String, userID: String, token: TokenRecord?) -> Grant? {
        if let token { return Grant(granted: token.granted, declined: token.declined, expired: token.expired) }
        return grants[GrantKey(appID: appID, userID: userID)]
    }

    /// Whether `userID` has authorized `appID` (so the app may see the user).
    func isVisible(userID: String, to appID: String) -> Bool {
        grants[GrantKey(appID: appID, userID: userID)] != nil
    }

    // MARK: Codes

    /// Mints an authorization code.
    mutating func issueCode(
        appID: String, userID: String, redirectURI: String, grant: Grant, metadata: [(String, String)],
        kind: TokenKind = .user, targets: [String: [String]] = [:]
    ) throws -> String {
        _ = try app(appID)
        _ = try user(userID)
        var code = RandomText.code()
        while codes[code] != nil { code = RandomText.code() }
        codes[code] = AuthorizationCode(
            appID: appID, userID: userID, redirectURI: redirectURI, granted: grant.granted, declined: grant.declined,
            createdAt: now, used: false, metadata: metadata, kind: kind, targets: targets)
        SecretLedger.note("oauth code", code)
        return code
    }
}

/// What a request's token turned out to be.
enum TokenResolution {
    /// A user or Page token the emulator issued (in whatever state).
    case token(TokenRecord)
    /// An app token: `APP_ID|APP_SECRET` or the one `client_credentials` gave.
    case app(EmulatedApp)
    /// A client token, `APP_ID|CLIENT_TOKEN`.
    case client(EmulatedApp)
    /// Not a token the emulator accepts.
    case failed(GraphError)

    /// The app the token belongs to, if known.
    var appID: String? {
        switch self {
        case .token(let record): return record.appID
        case .app(let app), .client(let app): return app.id
        case .failed: return nil
        }
    }
}
