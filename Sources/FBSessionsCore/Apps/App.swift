import Foundation

/// One tenant: a web backend with its Facebook app.
public struct App: Sendable, Equatable {
    /// The service's id for the app.
    public let id: String
    /// The unique name operators use (`key add --app NAME`).
    public let name: String
    /// The Facebook app id.
    public let facebookAppID: String
    /// Redirect URIs allowed in login URLs.
    public let redirectURIs: [String]
    /// Permissions the app requires; declined ones give `action_required: rerequest`.
    public let requiredPermissions: [String]
    /// When the app was added.
    public let createdAt: Date
    /// The Graph API version every Graph call and login dialog of this app uses (`app add|update
    /// --graph-version`); nil uses `FBS_GRAPH_VERSION`. A running instance may hold an app for up to
    /// `FBS_KEY_CACHE_TTL` seconds with its key, so a change reaches every call within that time.
    public let graphVersion: String?

    /// Creates an app value.
    public init(
        id: String, name: String, facebookAppID: String, redirectURIs: [String], requiredPermissions: [String],
        createdAt: Date, graphVersion: String? = nil
    ) {
        self.id = id
        self.name = name
        self.facebookAppID = facebookAppID
        self.redirectURIs = redirectURIs
        self.requiredPermissions = requiredPermissions
        self.createdAt = createdAt
        self.graphVersion = graphVersion
    }

    /// Checks the fields an operator gives, returning every problem.
    public static func validate(name: String, facebookAppID: String, redirectURIs: [String]) -> [String] {
        var problems: [String] = []
        if !(1...64).contains(name.count)
            || !name.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "-_.".unicodeScalars.contains($0)) })
        {
            problems.append("--name must be 1-64 characters of letters, digits, '-', '_' or '.'")
        }
        if facebookAppID.isEmpty || facebookAppID.count > 32 || !facebookAppID.allSatisfy(\.isASCII)
            || !facebookAppID.allSatisfy(\.isNumber)
        {
            problems.append("--facebook-app-id must be the numeric Facebook app id")
        }
        for uri in redirectURIs {
            guard let url = URL(string: uri), let scheme = url.scheme?.lowercased(), ["https", "http"].contains(scheme),
                url.host != nil, url.fragment == nil
            else {
                problems.append("--redirect-uri \(uri) is not an absolute http(s) URL without a fragment")
                continue
            }
        }
        return problems
    }
}
