import Foundation

/// A token from `oauth/access_token`: a code exchange or a long-lived exchange (docs/facebook-graph.md §4.2–§4.3).
///
/// `description`, `debugDescription` and reflection leave the token out.
public struct GraphTokenGrant: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// `access_token`: a secret.
    public var accessToken: String
    /// `token_type`, usually `bearer`.
    public var tokenType: String?
    /// `expires_in` (or the legacy `expires`) in seconds; `nil` when Graph gave none.
    public var expiresIn: Int?

    /// Creates a grant.
    /// - Parameters:
    ///   - accessToken: the token.
    ///   - tokenType: its type.
    ///   - expiresIn: its lifetime in seconds.
    public init(accessToken: String, tokenType: String? = nil, expiresIn: Int? = nil) {
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.expiresIn = expiresIn
    }

    /// When the token expires, counted from `issued`; `nil` when Graph gave no lifetime (or 0).
    /// - Parameter issued: when the grant was received.
    public func expiresAt(from issued: Date) -> Date? {
        guard let expiresIn, expiresIn > 0 else {
            return nil
        }
        return issued.addingTimeInterval(TimeInterval(expiresIn))
    }

    /// Type and lifetime; never the token.
    public var description: String {
        "GraphTokenGrant(tokenType: \(tokenType ?? "nil"), expiresIn: \(expiresIn.map(String.init) ?? "nil"), "
            + "accessToken: <redacted>)"
    }

    /// Same as `description`.
    public var debugDescription: String {
        description
    }

    /// Reflection without the token.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "tokenType": tokenType as Any, "expiresIn": expiresIn as Any,
                "accessToken": "<redacted>",
            ])
    }
}
