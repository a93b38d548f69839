/// A Facebook Login for Business configuration (docs/facebook-graph.md §4.6b): made in the App Dashboard, it
/// replaces `scope` in the login dialog (`config_id`) and fixes the token type, the permissions and the assets
/// (Pages, ad accounts, businesses, ...) each permission is granted on. The person grants all of it or nothing.
public struct BusinessConfiguration: Sendable, Equatable {
    /// The configuration id (digits), what the dialog's `config_id` names.
    public var id: String
    /// The app it belongs to; another app's dialog does not know it.
    public var appID: String
    /// The permissions it asks for, in order (`public_profile` is granted besides).
    public var permissions: [String]
    /// The asset ids each permission is granted on; a permission without an entry applies to all objects, and
    /// `debug_token` then leaves `target_ids` out.
    public var assets: [String: [String]]
    /// `.user` (a User access token) or `.systemUser` (a Business Integration System User access token).
    public var tokenKind: TokenKind

    /// Creates a configuration.
    public init(id: String, appID: String, permissions: [String], assets: [String: [String]], tokenKind: TokenKind) {
        self.id = id
        self.appID = appID
        self.permissions = permissions
        self.assets = assets
        self.tokenKind = tokenKind
    }
}

extension EmulatorStore {
    /// Records a configuration, checking its app, id, token type and that its assets name its own permissions.
    mutating func define(_ configuration: BusinessConfiguration) throws {
        _ = try app(configuration.appID)
        guard RandomText.isNumeric(configuration.id), (1...32).contains(configuration.id.utf8.count) else {
            throw EmulatorError("a configuration id is 1 to 32 digits")
        }
        guard [.user, .systemUser].contains(configuration.tokenKind) else {
            throw EmulatorError("a configuration's token type is user or system_user")
        }
        guard !configuration.permissions.isEmpty else {
            throw EmulatorError("a configuration needs at least one permission")
        }
        if let stray = configuration.assets.keys.sorted().first(where: { !configuration.permissions.contains($0) }) {
            throw EmulatorError("assets name \(stray), which is not one of the configuration's permissions")
        }
        if let other = businessConfigurations[configuration.id], other.appID != configuration.appID {
            throw EmulatorError("configuration \(configuration.id) belongs to another app")
        }
        businessConfigurations[configuration.id] = configuration
    }
}

extension Emulator {
    /// Defines (or replaces) a Facebook Login for Business configuration for an app. The dialog opened with
    /// `config_id` = `id` (and `response_type=code`, `override_default_response_type=true`) then grants exactly its
    /// permissions on its assets, and the code exchange gives a token of its type.
    /// - Parameters:
    ///   - id: the configuration id (digits); nil makes one up.
    ///   - appID: the app.
    ///   - permissions: the permissions it grants.
    ///   - assets: the asset (target) ids per permission.
    ///   - tokenKind: `.user` or `.systemUser`.
    /// - Returns: the configuration.
    /// - Throws: ``EmulatorError`` for an unknown app, a malformed id, another token type, no permissions, or
    ///   assets of a permission it does not grant.
    @discardableResult
    public func defineConfiguration(
        id: String? = nil, appID: String, permissions: [String], assets: [String: [String]] = [:],
        tokenKind: TokenKind = .user
    ) throws -> BusinessConfiguration {
        try state.withStore { store in
            let configuration = BusinessConfiguration(
                id: id ?? RandomText.digits(16), appID: appID, permissions: permissions, assets: assets,
                tokenKind: tokenKind)
            try store.define(configuration)
            return configuration
        }
    }

    /// The configurations defined, by id.
    public var businessConfigurations: [BusinessConfiguration] {
        state.withStore { $0.businessConfigurations.values.sorted { $0.id < $1.id } }
    }

    /// Issues a system user's access token (`debug_token` type `SYSTEM_USER`, never expires), as a Business
    /// Manager admin makes one for a system user of the business.
    /// - Parameters:
    ///   - appID: the app.
    ///   - userID: the system user (an emulated user stands in for it).
    ///   - granted: granted permissions.
    ///   - assets: the asset ids per permission (`granular_scopes` `target_ids`).
    /// - Returns: the token.
    /// - Throws: ``EmulatorError`` for an unknown app or user.
    public func issueSystemUserToken(
        appID: String, userID: String, granted: [String] = ["business_management"], assets: [String: [String]] = [:]
    ) throws -> IssuedToken {
        try state.withStore {
            try $0.issueUserToken(
                appID: appID, userID: userID, kind: .systemUser, longLived: true, expiresIn: 0,
                dataAccessExpiresIn: nil, granted: granted, declined: [], expired: [], targets: assets)
        }.snapshot
    }
}
