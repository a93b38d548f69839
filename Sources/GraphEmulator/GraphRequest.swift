import GraphVersions
import HTTPServer

/// A Graph request, decoded: the effective method, the path below the version, the served version, the
/// parameters from the query and a form body, and the access token.
struct GraphRequest: Sendable {
    /// The method, after Graph's `method=` override.
    let method: String
    /// Decoded path segments below the version prefix.
    let segments: [String]
    /// The version that serves the call (`facebook-api-version`).
    let version: String
    /// Parameters in order: the query's, then the form body's.
    let parameters: [(String, String)]
    /// The access token from `access_token`, or `Authorization: Bearer|OAuth`.
    let accessToken: String?
    /// Where generated URLs point, without a trailing slash.
    let baseURL: String
    /// The trace id of this answer (`x-fb-trace-id` and `fbtrace_id`).
    let traceID: String
    /// A problem found while decoding, answered before anything else.
    let problem: GraphError?
    /// The `DPoP` header (RFC 9449), which the SDK's direct Limited Login refresh sends.
    let dpopProof: String?

    /// The first value of parameter `name`, or nil.
    func parameter(_ name: String) -> String? {
        parameters.first { $0.0 == name }?.1
    }

    /// Every value of parameter `name`, in order.
    func parameters(named name: String) -> [String] {
        parameters.filter { $0.0 == name }.map(\.1)
    }

    /// The endpoint family this request belongs to.
    var endpoint: GraphEndpoint {
        switch segments {
        case [".well-known", "openid-configuration"]: return .openIDConfiguration
        case [".well-known", "oauth", "openid", "jwks"]: return .jwks
        case ["platform", "uninstall"]: return .uninstall
        case ["limited_login", "refresh"]: return .limitedRefresh
        default: break
        }
        switch segments.count {
        case 0 where parameter("ids") != nil: return .user
        case 1:
            switch segments[0] {
            case "debug_token": return .debugToken
            case "me": return .me
            default: return .user
            }
        case 2 where segments == ["oauth", "access_token"]: return .oauthAccessToken
        case 2 where segments == ["dialog", "oauth"]: return .dialog
        case 2 where segments[1] == "picture": return .picture
        case 2 where segments[1] == "permissions", 3 where segments[1] == "permissions": return .permissions
        default: return .other
        }
    }

    /// Decodes `request` on the emulator's `today` (which versions are served). Never fails: problems land in
    /// ``problem``.
    static func decode(
        _ request: Request, configuration: Emulator.Configuration, baseURL: String, today: CalendarDay
    ) -> GraphRequest {
        var problem: GraphError?
        var segments: [String] = []
        for raw in request.path.split(separator: "/", omittingEmptySubsequences: true) {
            guard let segment = FormCoding.percentDecode(raw, plusIsSpace: false) else {
                problem = problem ?? .invalidParameter("Invalid path encoding")
                continue
            }
            segments.append(segment)
        }
        var version = configuration.defaultVersion
        if let first = segments.first, let requested = PathVersion(first) {
            segments.removeFirst()
            if let served = requested.served(by: configuration.versions, on: today) {
                version = served
            } else {
                problem = problem ?? .unknownPath("/" + segments.joined(separator: "/"))
            }
        }
        var parameters: [(String, String)] = []
        if let query = FormCoding.parse(request.head.rawQuery) {
            parameters = query
        } else {
            problem = problem ?? .invalidParameter("Invalid query string encoding")
        }
        if !request.body.isEmpty, isForm(request.headers["Content-Type"]) {
            if let text = String(strictUTF8: request.body), let body = FormCoding.parse(text) {
                parameters += body
            } else {
                problem = problem ?? .invalidParameter("Invalid form body encoding")
            }
        } else if !request.body.isEmpty, isJSON(request.headers["Content-Type"]) {
            // Graph also takes parameters as a JSON object; nested values arrive as JSON text.
            if let members = JSONValue.parse(request.body)?.objectValue {
                parameters += members.map { name, value in (name, value.stringValue ?? value.text) }
            } else {
                problem = problem ?? .invalidParameter("Invalid JSON body")
            }
        }
        var method = request.method.uppercased()
        if ["GET", "POST"].contains(method), let override = parameters.first(where: { $0.0 == "method" })?.1 {
            method = override.uppercased()
        }
        return GraphRequest(
            method: method, segments: segments, version: version, parameters: parameters,
            accessToken: token(parameters: parameters, authorization: request.headers["Authorization"]),
            baseURL: baseURL, traceID: RandomText.traceID(), problem: problem, dpopProof: request.headers["DPoP"])
    }

    private static func isForm(_ contentType: String?) -> Bool {
        guard let contentType else { return true }
        return contentType.lowercased().hasPrefix("application/x-www-form-urlencoded")
    }

    private static func isJSON(_ contentType: String?) -> Bool {
        contentType?.lowercased().hasPrefix("application/json") == true
    }

    private static func token(parameters: [(String, String)], authorization: String?) -> String? {
        if let value = parameters.first(where: { $0.0 == "access_token" })?.1, !value.isEmpty { return value }
        guard let authorization else { return nil }
        for scheme in ["Bearer ", "OAuth "] where authorization.lowercased().hasPrefix(scheme.lowercased()) {
            let value = authorization.dropFirst(scheme.count).trimmingSpaces
            return value.isEmpty ? nil : value
        }
        return nil
    }
}

/// A `vMAJOR.MINOR` path segment.
struct PathVersion {
    let version: GraphVersion

    init?(_ text: String) {
        guard let version = GraphVersion(text) else { return nil }
        self.version = version
    }

    /// Whether Graph ever had this version: v1.0, v2.0–v2.12, v3.0–v3.3, then vN.0.
    var everExisted: Bool {
        switch version.major {
        case 1: return version.minor == 0
        case 2: return version.minor <= 12
        case 3: return version.minor <= 3
        default: return version.major >= 4 && version.minor == 0
        }
    }

    /// The version that serves a call to this one on `day` (``GraphVersionTable/servingVersion(for:on:)``), nil
    /// when Graph never had it or does not serve it yet.
    func served(by table: GraphVersionTable, on day: CalendarDay) -> String? {
        guard everExisted else { return nil }
        return table.servingVersion(for: version, on: day)?.description
    }
}

extension Substring {
    /// The text without leading and trailing spaces.
    var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
