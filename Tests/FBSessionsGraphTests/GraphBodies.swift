/// Graph answers quoted from docs/facebook-graph.md (section in each comment); where the document gives only the
/// code and name, the body is built in the §7.1 format with the documented name as the message.
enum GraphBodies {
    /// §2.4 and §7.2: expired token (190/463), HTTP 400.
    static let expired = #"""
        {"error":{"message":"Error validating access token: Session has expired on Thursday, 06-Oct-22 00:00:00 PDT.\#
         The current time is Tuesday, 22-Nov-22 19:54:40 PST.","type":"OAuthException","code":190,\#
        "error_subcode":463,"fbtrace_id":"AbCdEfGh123"}}
        """#
    /// §2.4: password changed (190/460).
    static let passwordChanged = #"""
        {"error":{"message":"Error validating access token: The session has been invalidated because the user\#
         changed their password or Facebook has changed the session for security reasons.","type":"OAuthException",\#
        "code":190,"error_subcode":460,"fbtrace_id":"A1"}}
        """#
    /// §7.2: app not installed (190/458).
    static let appRemoved = #"""
        {"error":{"message":"Error validating access token: The user has not authorized application 1234567890.",\#
        "type":"OAuthException","code":190,"error_subcode":458,"fbtrace_id":"A2"}}
        """#
    /// §7.2: checkpointed (190/459).
    static let checkpoint = #"""
        {"error":{"message":"Error validating access token: You cannot access the app till you log in to\#
         www.facebook.com and follow the instructions given.","type":"OAuthException","code":190,\#
        "error_subcode":459,"fbtrace_id":"A3"}}
        """#
    /// §7.2: unconfirmed user (190/464).
    static let unconfirmed = #"""
        {"error":{"message":"Error validating access token: Sessions for the user are not allowed because the user\#
         is not a confirmed user.","type":"OAuthException","code":190,"error_subcode":464,"fbtrace_id":"A4"}}
        """#
    /// §7.2: invalidated through the API (190/466).
    static let revoked = #"""
        {"error":{"message":"Error validating access token: The session was invalidated explicitly using an API\#
         call.","type":"OAuthException","code":190,"error_subcode":466,"fbtrace_id":"A5"}}
        """#
    /// §7.2: logged out (190/467).
    static let loggedOut = #"""
        {"error":{"message":"Error validating access token: The session is invalid because the user logged out.",\#
        "type":"OAuthException","code":190,"error_subcode":467,"fbtrace_id":"A6"}}
        """#
    /// §2.4: token that cannot be parsed (190, no subcode).
    static let malformedToken = #"""
        {"error":{"message":"Invalid OAuth access token.","type":"OAuthException","code":190,"fbtrace_id":"A7"}}
        """#
    /// §7.2: an expired token whose body leaves out the subcode (RS `err__access_token_session_has_expired.json`).
    static let expiredWithoutSubcode = #"""
        {"error":{"message":"Error validating access token: Session has expired on Wednesday, 16-Nov-22 07:45:51\#
         PST. The current time is Thursday, 17-Nov-22 21:30:03 PST.","type":"OAuthException","code":190,\#
        "fbtrace_id":"A8"}}
        """#
    /// §7.2: code 102, API Session.
    static let apiSession = #"""
        {"error":{"message":"Session key invalid or no longer valid","type":"OAuthException","code":102,\#
        "fbtrace_id":"A9"}}
        """#
    /// §7.5: an OAuthException with no code at all.
    static let oauthNoCode = #"{"error":{"message":"Error validating access token.","type":"OAuthException"}}"#
    /// §2.4: data access expired (190/493).
    static let dataAccessExpired = #"""
        {"error":{"message":"The access token is invalid since the user hasn't engaged the app in longer than 90\#
         days.","type":"OAuthException","code":190,"error_subcode":493,"fbtrace_id":"B1"}}
        """#
    /// §2.4 text without the subcode.
    static let dataAccessExpiredWithoutSubcode = #"""
        {"error":{"message":"The access token is invalid since the user hasn't engaged the app in longer than 90\#
         days.","type":"OAuthException","code":190,"fbtrace_id":"B2"}}
        """#
    /// §6.1: missing permission (200), HTTP 403.
    static let permission200 = #"""
        {"error":{"message":"(#200) The user hasn't authorized the application to perform this action",\#
        "type":"OAuthException","code":200}}
        """#
    /// §7.2: API Permission Denied (10).
    static let permission10 = #"""
        {"error":{"message":"(#10) Application does not have permission for this action","type":"OAuthException",\#
        "code":10,"fbtrace_id":"B3"}}
        """#
    /// §7.3 and §12: app rate limit (4), HTTP 400.
    static let rate4 = #"""
        {"error":{"message":"(#4) Application request limit reached","type":"OAuthException","code":4,\#
        "fbtrace_id":"C1"}}
        """#
    /// §7.1: user rate limit (17) marked transient.
    static let rate17 = #"""
        {"error":{"message":"(#17) User request limit reached","type":"OAuthException","is_transient":true,\#
        "code":17,"fbtrace_id":"C2"}}
        """#
    /// §7.2: Pages rate limit (32), quoted from D-rate.
    static let rate32 = #"""
        {"error":{"message":"(#32) Page request limit reached","type":"OAuthException","code":32,\#
        "fbtrace_id":"Fz54k3GZrio"}}
        """#
    /// §7.2: custom rate limit (613/1996).
    static let rate613 = #"""
        {"error":{"message":"(#613) Calls to this api have exceeded the rate limit.","type":"OAuthException",\#
        "code":613,"error_subcode":1996,"fbtrace_id":"C3"}}
        """#
    /// §7.2: application limit reached (341).
    static let rate341 = #"""
        {"error":{"message":"(#341) Application limit reached","type":"OAuthException","code":341,\#
        "fbtrace_id":"C4"}}
        """#
    /// §7.2: API Unknown (1).
    static let unknown1 = #"""
        {"error":{"message":"An unknown error has occurred.","type":"OAuthException","code":1,"fbtrace_id":"D1"}}
        """#
    /// §7.2: API Service (2), marked transient.
    static let service2 = #"""
        {"error":{"message":"An unexpected error has occurred. Please retry your request later.",\#
        "type":"OAuthException","is_transient":true,"code":2,"fbtrace_id":"D2"}}
        """#
    /// §2.4: unknown field (100).
    static let unknownField = #"""
        {"error":{"message":"(#100) Tried accessing nonexisting field (foo) on node type (User)",\#
        "type":"OAuthException","code":100,"fbtrace_id":"E1"}}
        """#
    /// §2.4: node not visible (100/33, GraphMethodException).
    static let unsupportedGet = #"""
        {"error":{"message":"Unsupported get request. Object with ID '123' does not exist, cannot be loaded due to\#
         missing permissions, or does not support this operation. Please read the Graph API documentation at\#
         https://developers.facebook.com/docs/graph-api","type":"GraphMethodException","code":100,\#
        "error_subcode":33,"fbtrace_id":"E2"}}
        """#
    /// §8.2: appsecret_proof missing.
    static let proofMissing = #"""
        {"error":{"message":"API calls from the server require an appsecret_proof argument",\#
        "type":"GraphMethodException","code":100}}
        """#
    /// §8.2: appsecret_proof wrong.
    static let proofInvalid = #"""
        {"error":{"message":"Invalid appsecret_proof provided in the API argument","type":"GraphMethodException",\#
        "code":100}}
        """#
    /// §2.4: no token on /me (2500).
    static let noToken = #"""
        {"error":{"message":"An active access token must be used to query information about the current user.",\#
        "type":"OAuthException","code":2500,"fbtrace_id":"E3"}}
        """#
    /// §7.2: blocked for policy violations (368).
    static let blocked368 = #"""
        {"error":{"message":"It looks like you were misusing this feature by going too fast.",\#
        "type":"OAuthException","code":368,"fbtrace_id":"E4"}}
        """#
    /// §4.2: code reused (100/36009).
    static let codeReused = #"""
        {"error":{"message":"This authorization code has been used.","type":"OAuthException","code":100,\#
        "error_subcode":36009,"fbtrace_id":"F1"}}
        """#
    /// §4.2: redirect_uri differs (100/36008).
    static let redirectMismatch = #"""
        {"error":{"message":"Error validating verification code. Please make sure your redirect_uri is identical to\#
         the one you used in the OAuth dialog request","type":"OAuthException","code":100,"error_subcode":36008,\#
        "fbtrace_id":"F2"}}
        """#
    /// §4.2: bad client secret (1).
    static let badClientSecret = #"""
        {"error":{"message":"Error validating client secret.","type":"OAuthException","code":1,"fbtrace_id":"F3"}}
        """#

    // MARK: debug_token (§3.3)

    /// Short-lived user token (RS), HTTP 200.
    static let debugValidShort = #"""
        {"data":{"app_id":"257422819769992","type":"USER","application":"oauth2-rs-f-b-web-app-demo",\#
        "data_access_expires_at":1676526788,"expires_at":1668754800,"is_valid":true,\#
        "metadata":{"auth_type":"rerequest"},"scopes":["public_profile"],"user_id":"123"}}
        """#
    /// Long-lived user token (RS).
    static let debugValidLong = #"""
        {"data":{"app_id":"257422819769992","type":"USER","application":"oauth2-rs-f-b-web-app-demo",\#
        "data_access_expires_at":1676526788,"expires_at":1673934788,"is_valid":true,"issued_at":1668750788,\#
        "scopes":["public_profile"],"user_id":"123"}}
        """#
    /// Documented example with granular scopes (D-dbg-guide).
    static let debugGranular = #"""
        {"data":{"app_id":"1234567890","type":"USER","application":"Demo","data_access_expires_at":1576687825,\#
        "expires_at":1570820400,"is_valid":true,"scopes":["pages_show_list","public_profile"],\#
        "granular_scopes":[{"scope":"pages_show_list","target_ids":["111","222"]}],"user_id":"10215241773831025"}}
        """#
    /// Older documented example: numeric app_id, metadata.sso (D-manual).
    static let debugNumericAppID = #"""
        {"data": {"app_id": 138483919580948, "type": "USER", "application": "Social Cafe", "expires_at": 1352419328,\#
         "is_valid": true, "issued_at": 1347235328, "metadata": {"sso": "iphone-safari"}, "scopes": ["email",\#
         "publish_actions"], "user_id": "1207059"}}
        """#
    /// Expired user token (RS): HTTP 200, is_valid false, error.subcode 463.
    static let debugExpired = #"""
        {"data":{"app_id":"257422819769992","type":"USER","application":"oauth2-rs-f-b-web-app-demo",\#
        "data_access_expires_at":1671205551,"error":{"code":190,\#
        "message":"Error validating access token: Session has expired on Wednesday, 16-Nov-22 07:45:51 PST. The\#
         current time is Thursday, 17-Nov-22 21:30:03 PST.","subcode":463},"expires_at":1668613551,"is_valid":false,\#
        "issued_at":1663429551,"scopes":["email","public_profile"],"user_id":"123"}}
        """#
    /// Password changed (RS): expires_at 0, is_valid false, subcode 460.
    static let debugPasswordChanged = #"""
        {"data":{"app_id":"257422819769992","type":"USER","application":"demo","error":{"code":190,\#
        "message":"Error validating access token: The session has been invalidated because the user changed their\#
         password or Facebook has changed the session for security reasons.","subcode":460},"expires_at":0,\#
        "is_valid":false,"scopes":["public_profile"],"user_id":"123"}}
        """#
    /// Invalidated through the API (RS): subcode 466.
    static let debugRevoked = #"""
        {"data":{"app_id":"257422819769992","type":"USER","error":{"code":190,\#
        "message":"Error validating access token: The session was invalidated explicitly using an API call.",\#
        "subcode":466},"expires_at":0,"is_valid":false,"scopes":[],"user_id":"123"}}
        """#
    /// Garbage input token (RS): HTTP 200 with three keys.
    static let debugGarbage = #"""
        {"data":{"error":{"code":190,"message":"Invalid OAuth access token - Cannot parse access token"},\#
        "is_valid":false,"scopes":[]}}
        """#
    /// App token as input (RS).
    static let debugAppToken = #"""
        {"data":{"app_id":"257422819769992","type":"APP","application":"oauth2-rs-f-b-web-app-demo","is_valid":true,\#
        "scopes":[]}}
        """#
    /// access_token missing or from another app: HTTP 400, 100.
    static let debugNoAppToken = #"""
        {"error":{"message":"(#100) You must provide an app access token, or a user access token that is an owner or\#
         developer of the app","type":"OAuthException","code":100,"fbtrace_id":"G1"}}
        """#
    /// The app token itself refused (a wrong app secret): 190 at the top level.
    static let debugBadAppToken = #"""
        {"error":{"message":"Invalid OAuth access token signature.","type":"OAuthException","code":190,\#
        "fbtrace_id":"G2"}}
        """#
    /// data.error with a transient code (§3.3 variant "Cannot get application info due to a system error").
    static let debugSystemError = #"""
        {"data":{"error":{"code":2,\#
        "message":"Error validating application. Cannot get application info due to a system error."},\#
        "is_valid":false,"scopes":[]}}
        """#

    // MARK: Success shapes

    /// §2.3, with fields added per D-user.
    static let profile = #"""
        {"id":"10215241773831025","name":"Jane Q Doe","first_name":"Jane","middle_name":"Q","last_name":"Doe",\#
        "email":"jane@example.com","picture":{"data":{"height":50,"is_silhouette":false,\#
        "url":"https://platform-lookaside.fbsbx.com/platform/profilepic/?asid=10215241773831025&height=50&width=50&e\#
        xt=1755864786&hash=AeQ","width":50}}}
        """#
    /// §6.1, plus an expired entry.
    static let permissions = #"""
        {"data":[{"permission":"public_profile","status":"granted"},{"permission":"email",\#
        "status":"granted"},{"permission":"user_friends","status":"declined"},{"permission":"user_link",\#
        "status":"expired"}]}
        """#
    /// §4.3.
    static let longLived = #"{"access_token":"EAALongLivedToken456","token_type":"bearer","expires_in":5183944}"#
    /// §4.2, a real short-lived web token answer.
    static let codeGrant = #"{"access_token":"EAAZAk38ShortLived","token_type":"bearer","expires_in":4172}"#
    /// §5.2.
    static let picture = #"""
        { "data": { "height": 50, "is_silhouette": false, "url":\#
         "https://platform-lookaside.fbsbx.com/platform/profilepic/?asid=113457059789516&height=50&width=50&ext=1553\#
        045173&hash=AeQQylAIZzg5-91Q", "width": 50 } }
        """#
}
