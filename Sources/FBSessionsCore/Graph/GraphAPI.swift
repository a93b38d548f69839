/// The Graph API calls the session manager makes (the port; `FBSessionsGraph.GraphClient` is the adapter).
///
/// Every call takes the app's `GraphCredentials`, so one implementation serves every app. Calls with a user token
/// send its `appsecret_proof`; app-token calls send `APP_ID|APP_SECRET`. Failures are `GraphError`; a cancelled
/// task gets `CancellationError`. Implementations retry transient failures themselves (bounded, with backoff,
/// never a single-use call that may have reached Graph), so a `GraphError.transient` is final for this call.
///
/// Tokens, secrets, proofs and codes never appear in a thrown error's `description` or `debugDescription`.
public protocol GraphAPI: Sendable {
    /// Inspects a token with the app token: `GET /debug_token?input_token=…` (docs/facebook-graph.md §3).
    ///
    /// An input token Graph rejects is returned with `isValid == false` and its `error` (use `failure(now:)`),
    /// because `debug_token` answers those with HTTP 200. Thrown errors concern the call itself: `.transient` and
    /// `.rateLimited` (also when `data.error` says so), or `.other` when Graph refuses the app token (wrong app
    /// secret or id: a configuration problem, never a reason to close a user's session).
    /// - Parameters:
    ///   - inputToken: the token to inspect.
    ///   - credentials: the app's credentials.
    /// - Returns: what Graph knows about the token.
    func debugToken(inputToken: String, credentials: GraphCredentials) async throws -> GraphTokenInfo

    /// Reads the token owner's profile: `GET /me?fields=…` (docs/facebook-graph.md §2).
    /// - Parameters:
    ///   - fields: the fields to ask for, for example `GraphProfile.defaultFields`; `picture.type(large)` style
    ///     modifiers are allowed.
    ///   - accessToken: the user token.
    ///   - credentials: the app's credentials.
    /// - Returns: the profile; fields Graph left out are `nil`.
    func me(fields: [String], accessToken: String, credentials: GraphCredentials) async throws -> GraphProfile

    /// Reads granted, declined and expired permissions: `GET /me/permissions` (docs/facebook-graph.md §6.1).
    /// - Parameters:
    ///   - accessToken: the user token.
    ///   - credentials: the app's credentials.
    /// - Returns: the permission lists.
    func permissions(accessToken: String, credentials: GraphCredentials) async throws -> GraphPermissions

    /// De-authorizes the app for the token's user: `DELETE /me/permissions` (docs/facebook-graph.md §6.2). Every token
    /// of the user for the app stops working. Not repeated once the request may have reached Graph.
    /// - Parameters:
    ///   - accessToken: the user token.
    ///   - credentials: the app's credentials.
    func revokePermissions(accessToken: String, credentials: GraphCredentials) async throws

    /// Exchanges an OAuth code for a token: `GET /oauth/access_token?code=…` (docs/facebook-graph.md §4.2).
    ///
    /// A code is single-use, so the call is repeated only after a failure to connect, never once the request
    /// may have reached Graph (after a timeout, a dropped connection or any answer).
    /// - Parameters:
    ///   - code: the `code` from the login redirect.
    ///   - redirectURI: exactly the `redirect_uri` of the login dialog.
    ///   - credentials: the app's credentials.
    /// - Returns: the (short-lived) token.
    func exchangeCode(code: String, redirectURI: String, credentials: GraphCredentials) async throws
        -> GraphTokenGrant

    /// Exchanges a token for a long-lived one: `grant_type=fb_exchange_token` (docs/facebook-graph.md §4.3). The input
    /// token stays valid, so repeating the call is safe.
    /// - Parameters:
    ///   - accessToken: a valid user token.
    ///   - credentials: the app's credentials.
    /// - Returns: the long-lived token (about 60 days); store it instead of the input.
    func exchangeForLongLivedToken(accessToken: String, credentials: GraphCredentials) async throws
        -> GraphTokenGrant

    /// Describes the token owner's picture: `GET /me/picture?redirect=false` (docs/facebook-graph.md §5).
    /// - Parameters:
    ///   - size: a named size, or width/height, or `.default`.
    ///   - accessToken: the user token.
    ///   - credentials: the app's credentials.
    /// - Returns: its URL, size and whether it is the silhouette.
    func pictureURL(size: GraphPictureSize, accessToken: String, credentials: GraphCredentials) async throws
        -> GraphPicture

    /// A generic `GET` for later needs: `path` is relative to the version (for example `me/accounts`).
    /// - Parameters:
    ///   - path: the node or edge path, without version or query.
    ///   - query: extra query parameters (`access_token` and `appsecret_proof` are added from `authentication`).
    ///   - authentication: the token to send.
    ///   - credentials: the app's credentials.
    /// - Returns: the response body, which is valid JSON.
    func get(
        path: String, query: [(name: String, value: String)], authentication: GraphAuthentication,
        credentials: GraphCredentials
    ) async throws -> [UInt8]
}
