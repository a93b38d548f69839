import Foundation
import Support

/// One Graph API error as Facebook sends it: the body
/// `{"error":{"message","type","code","error_subcode","is_transient","fbtrace_id"}}`, its HTTP status, and the
/// `WWW-Authenticate: OAuth "Facebook Platform" "<kind>" "<message>"` header for OAuth errors.
///
/// Messages are the ones recorded in docs/facebook-graph.md (§2.4, §3.3, §4.2, §7, §8); the few the notes do not record
/// are marked "emulator wording" in the README.
struct GraphError: Error, Sendable, Equatable {
    var message: String
    var type: String
    var code: Int
    var subcode: Int?
    var status: Int
    /// The `<kind>` of `WWW-Authenticate`, or nil for no header.
    var authenticateKind: String?
    var isTransient: Bool?

    init(
        _ message: String, type: String = "OAuthException", code: Int, subcode: Int? = nil, status: Int = 400,
        authenticateKind: String? = nil, isTransient: Bool? = nil
    ) {
        self.message = message
        self.type = type
        self.code = code
        self.subcode = subcode
        self.status = status
        self.authenticateKind = authenticateKind ?? (type == "OAuthException" ? "invalid_request" : nil)
        self.isTransient = isTransient
    }

    /// The JSON body. `omitSubcode` leaves `error_subcode` out, as real Graph sometimes does.
    func body(traceID: String, omitSubcode: Bool) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("message", .string(message)), ("type", .string(type)), ("code", .int(Int64(code))),
        ]
        if let subcode, !omitSubcode { members.append(("error_subcode", .int(Int64(subcode)))) }
        if let isTransient { members.append(("is_transient", .bool(isTransient))) }
        members.append(("fbtrace_id", .string(traceID)))
        return .object([("error", .object(members))])
    }

    /// The `WWW-Authenticate` value, or nil.
    var authenticateHeader: String? {
        authenticateKind.map { #"OAuth "Facebook Platform" ""# + $0 + #"" ""# + message + #"""# }
    }

    // MARK: Tokens (190 family and friends)

    static func tokenError(_ message: String, subcode: Int? = nil) -> GraphError {
        GraphError(message, code: 190, subcode: subcode, authenticateKind: "invalid_token")
    }

    /// A string that is not a token at all.
    static let unparseableToken = tokenError("Invalid OAuth access token - Cannot parse access token")
    /// A token-shaped string the emulator never issued.
    static let undecryptableToken = tokenError("The access token could not be decrypted")
    /// `APP_ID|SECRET` with a wrong secret or an unknown app.
    static let badAppTokenSignature = tokenError("Invalid OAuth access token signature.")

    /// The error for a token invalidated with `reason`.
    static func invalidated(_ reason: TokenInvalidation, token: TokenRecord, now: Int64) -> GraphError {
        tokenError(message(for: reason, token: token, now: now), subcode: reason.rawValue)
    }

    /// The message Graph uses for `reason`.
    static func message(for reason: TokenInvalidation, token: TokenRecord, now: Int64) -> String {
        let prefix = "Error validating access token: "
        switch reason {
        case .appNotInstalled:
            return prefix + "User \(token.userID ?? "0") has not authorized application \(token.appID)."
        case .checkpointed:
            return prefix
                + "You cannot access the app till you log in to www.facebook.com and follow the instructions given."
        case .passwordChanged:
            return prefix
                + "The session has been invalidated because the user changed their password or Facebook has changed"
                + " the session for security reasons."
        case .expired:
            let expiry = token.expiresAt > 0 ? token.expiresAt : now
            return prefix + "Session has expired on \(PacificTime.format(expiry)). "
                + "The current time is \(PacificTime.format(now))."
        case .unconfirmedUser:
            return prefix + "Sessions for the user \(token.userID ?? "0") are not allowed because the user is not a"
                + " confirmed user."
        case .invalidatedByAPI:
            return prefix + "The session was invalidated explicitly using an API call."
        case .loggedOut:
            return prefix + "The session is invalid because the user logged out."
        case .dataAccessExpired:
            return "The access token is invalid since the user hasn't engaged the app in longer than 90 days."
        }
    }

    // MARK: Requests

    static let activeTokenRequired = GraphError(
        "An active access token must be used to query information about the current user.", code: 2500)
    static let tokenRequired = GraphError("An access token is required to request this resource.", code: 104)

    static func nonexistingField(_ field: String, node: String = "User") -> GraphError {
        GraphError("(#100) Tried accessing nonexisting field (\(field)) on node type (\(node))", code: 100)
    }

    static func unsupported(_ method: String, id: String) -> GraphError {
        GraphError(
            "Unsupported \(method.lowercased()) request. Object with ID '\(id)' does not exist, cannot be loaded due to"
                + " missing permissions, or does not support this operation. Please read the Graph API documentation"
                + " at https://developers.facebook.com/docs/graph-api",
            type: "GraphMethodException", code: 100, subcode: 33)
    }

    /// A node name that is neither `me` nor an id: the emulator knows no usernames or aliases, so Graph's answer
    /// for an alias that does not exist (observed with v25.0: HTTP 400, code 803).
    static func aliasNotFound(_ names: String) -> GraphError {
        GraphError("(#803) Some of the aliases you requested do not exist: \(names)", code: 803)
    }

    /// An empty name in `?ids=` (emulator wording, after an early Graph mock's).
    static let emptyIdentifier = GraphError("(#100) Cannot specify an empty identifier", code: 100)

    static func unknownPath(_ components: String) -> GraphError {
        GraphError("Unknown path components: \(components)", code: 2500)
    }

    static func invalidParameter(_ detail: String) -> GraphError {
        GraphError("(#100) \(detail)", code: 100)
    }

    static let permissionDenied = GraphError(
        "(#200) The user hasn't authorized the application to perform this action", code: 200, status: 403)

    // MARK: appsecret_proof (§8.2)

    static let proofRequired = GraphError(
        "API calls from the server require an appsecret_proof argument", type: "GraphMethodException", code: 100)
    static let proofInvalid = GraphError(
        "Invalid appsecret_proof provided in the API argument", type: "GraphMethodException", code: 100)

    // MARK: debug_token (§3.3)

    static let debugTokenNeedsAppToken = GraphError(
        "(#100) You must provide an app access token, or a user access token that is an owner or developer of the app",
        code: 100)
    static let inputTokenRequired = GraphError("(#100) The parameter input_token is required", code: 100)

    // MARK: oauth/access_token (§4.2)

    static func codeError(_ message: String, subcode: Int? = nil) -> GraphError {
        GraphError(message, code: 100, subcode: subcode, authenticateKind: "invalid_code")
    }

    static let codeUsed = codeError("This authorization code has been used.", subcode: 36009)
    static let codeExpired = codeError("This authorization code has expired.")
    static let codeMalformed = codeError("Invalid verification code format.")
    static let redirectMismatch = codeError(
        "Error validating verification code. Please make sure your redirect_uri is identical to the one you used in"
            + " the OAuth dialog request", subcode: 36008)
    static let missingClientID = GraphError("Missing client_id parameter.", code: 101)
    static let invalidClientID = GraphError("Error validating application. Invalid application ID.", code: 101)
    static let invalidClientSecret = GraphError("Error validating client secret.", code: 1)
    static let missingCode = GraphError("Missing authorization code", code: 1)
    static let missingRedirectURI = GraphError("Missing redirect_uri parameter.", code: 191)

    static func invalidGrantType(_ grant: String) -> GraphError {
        GraphError(
            "Invalid grant_type: '\(grant)'. Supported types: authorization_code, client_credentials", code: 100)
    }

    // MARK: Limited Login's uninstall endpoint (emulator wording: Facebook's answers are not documented)

    static let invalidIDToken = tokenError("Invalid id_token.")
    static let expiredIDToken = tokenError("The id_token has expired.", subcode: 463)

    static let missingDPoPProof = GraphError("(#100) A DPoP proof header is required", code: 100)

    static func missingParameter(_ name: String) -> GraphError {
        GraphError("(#100) The parameter \(name) is required", code: 100)
    }

    // MARK: Transient and throttling (§7.2, §12.13)

    static let unknown = GraphError("An unknown error has occurred.", code: 1, status: 500, isTransient: true)
    static let service = GraphError(
        "An unexpected error has occurred. Please retry your request later.", code: 2, status: 500, isTransient: true)
}

/// Times in the form Graph's 463 message uses: `Thursday, 06-Oct-22 00:00:00 PDT`, in Pacific time.
enum PacificTime {
    /// One formatter, used by one thread at a time.
    private static let formatter: Locked<DateFormatter> = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "America/Los_Angeles") ?? TimeZone(secondsFromGMT: -8 * 3600)
        formatter.dateFormat = "EEEE, dd-MMM-yy HH:mm:ss zzz"
        return Locked(formatter)
    }()

    static func format(_ seconds: Int64) -> String {
        formatter.withLock { $0.string(from: Date(timeIntervalSince1970: TimeInterval(seconds))) }
    }
}
