import Crypto
import Foundation
import HTTPServer

/// What a Graph route answers, before the common headers are added.
enum GraphReply: Sendable {
    /// A JSON body.
    case json(JSONValue, status: Int = 200)
    /// A Graph error.
    case error(GraphError)
    /// `302 Found` to this URL.
    case redirect(String)
    /// A successful DELETE: `{"success":true}`, or a bare `true` when that switch is on.
    case success
    /// A finished response (HTML pages, image bytes, injected faults).
    case raw(Response)
}

/// A route's answer plus what the common headers need.
struct GraphAnswer: Sendable {
    var reply: GraphReply
    /// Send `x-app-usage` at 100 (an injected throttling error).
    var throttled = false

    init(_ reply: GraphReply) {
        self.reply = reply
    }
}

/// Who is calling, according to the request's token.
enum Caller {
    /// No token.
    case anonymous
    /// A user or Page token the emulator issued, already checked (state and proof).
    case user(TokenRecord)
    /// An app token.
    case app(EmulatedApp)
    /// A client token.
    case client(EmulatedApp)

    var appID: String? {
        switch self {
        case .anonymous: return nil
        case .user(let record): return record.appID
        case .app(let app), .client(let app): return app.id
        }
    }
}

/// The Graph routes. Each takes the decoded request and the store (under the state lock) and returns an answer;
/// none blocks.
enum GraphRoutes {
    /// Routes a decoded Graph request.
    static func answer(_ request: GraphRequest, store: inout EmulatorStore) -> GraphAnswer {
        if let problem = request.problem { return GraphAnswer(.error(problem)) }
        switch request.endpoint {
        case .me, .user: return request.segments.isEmpty ? nodes(request, store: &store) : node(request, store: &store)
        case .debugToken: return debugToken(request, store: &store)
        case .oauthAccessToken: return accessToken(request, store: &store)
        case .permissions: return permissions(request, store: &store)
        case .picture: return picture(request, store: &store)
        case .dialog: return DialogRoutes.answer(request, store: &store)
        case .openIDConfiguration, .jwks, .uninstall, .limitedRefresh: return LimitedLoginRoutes.answer(request, store: &store)
        case .cdn, .other: return other(request)
        }
    }

    /// Paths that match no route: an unknown edge gives `Unknown path components`, anything else
    /// `Unsupported <method> request`.
    static func other(_ request: GraphRequest) -> GraphAnswer {
        if request.segments.count >= 2 {
            return GraphAnswer(.error(.unknownPath("/" + request.segments.dropFirst().joined(separator: "/"))))
        }
        return GraphAnswer(.error(.unsupported(request.method, id: request.segments.first ?? "")))
    }

    /// Identifies and checks the caller: an unknown token fails; a user or Page token must not be invalidated or
    /// expired (nor past its data-access expiry when `needsData`) and must carry a valid `appsecret_proof` when
    /// its app requires one or when one is sent. A client token counts as no token (Graph treats tokens it
    /// does not accept for a call "as though no access token was provided").
    static func caller(
        _ request: GraphRequest, store: EmulatorStore, needsData: Bool
    ) -> Result<Caller, GraphError> {
        guard let string = request.accessToken else { return .success(.anonymous) }
        switch store.resolve(string) {
        case .failed(let error):
            return .failure(error)
        case .client(let app):
            return .success(.client(app))
        case .app(let app):
            if let error = proofFailure(token: string, app: app, request: request, store: store, required: false) {
                return .failure(error)
            }
            return .success(.app(app))
        case .token(let record):
            if let error = store.failure(of: record, needsData: needsData) { return .failure(error) }
            guard let app = store.apps[record.appID] else { return .failure(.badAppTokenSignature) }
            if let error = proofFailure(
                token: string, app: app, request: request, store: store, required: app.requiresProof)
            {
                return .failure(error)
            }
            return .success(.user(record))
        }
    }

    /// Checks `appsecret_proof` (docs/facebook-graph.md §8): HMAC-SHA256(secret, token) in hex, or with
    /// `appsecret_time=t` HMAC-SHA256(secret, token + "|" + t), valid for 5 minutes. The time is compared with the
    /// emulator's clock and with the host's, so a client whose clock was not moved along with the emulator's is not
    /// refused.
    static func proofFailure(
        token: String, app: EmulatedApp, request: GraphRequest, store: EmulatorStore, required: Bool
    ) -> GraphError? {
        guard let proof = request.parameter("appsecret_proof") else {
            return required ? .proofRequired : nil
        }
        var message = token
        if let time = request.parameter("appsecret_time") {
            guard RandomText.isNumeric(time), time.count <= 12, let stamp = Int64(time) else { return .proofInvalid }
            let hostNow = Int64(Date().timeIntervalSince1970)
            let fresh = [store.now, hostNow].contains { now in stamp <= now + 300 && now - stamp <= 300 }
            guard fresh else { return .proofInvalid }
            message += "|" + time
        }
        guard let bytes = Hex.decode(proof),
            HMACSHA256.isValidAuthenticationCode(bytes, for: Array(message.utf8), key: Array(app.secret.utf8))
        else { return .proofInvalid }
        return nil
    }

    /// The user a node id names for `caller`: `me` is the token's user; another id must be a user who authorized
    /// the caller's app (or the token's own user).
    static func subject(
        _ node: String, method: String, caller: Caller, store: EmulatorStore
    ) -> Result<EmulatedUser, GraphError> {
        switch caller {
        case .user(let record):
            let id = node == "me" ? record.userID ?? "" : node
            guard let user = store.users[id],
                id == record.userID || store.isVisible(userID: id, to: record.appID)
            else { return .failure(.unsupported(method, id: node)) }
            return .success(user)
        case .app(let app):
            guard node != "me" else { return .failure(.activeTokenRequired) }
            guard let user = store.users[node], store.isVisible(userID: node, to: app.id) else {
                return .failure(.unsupported(method, id: node))
            }
            return .success(user)
        case .anonymous, .client:
            return .failure(node == "me" ? .activeTokenRequired : .tokenRequired)
        }
    }
}
