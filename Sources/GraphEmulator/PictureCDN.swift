import Crypto

/// The emulator's stand-in for `platform-lookaside.fbsbx.com`: signed, expiring picture URLs under `/__cdn/`.
///
/// - `/__cdn/platform/profilepic/?asid=ID&height=H&width=W&ext=EXPIRY&hash=HASH`: a user's picture.
/// - `/__cdn/static/silhouette/?height=H&width=W&ext=EXPIRY&hash=HASH`: the default silhouette.
///
/// The hash is an HMAC of the other parameters under a per-emulator key; a changed parameter gives 403
/// `URL signature mismatch`, a passed `ext` gives 403 `URL signature expired`.
enum PictureCDN {
    static let profilePath = ["__cdn", "platform", "profilepic"]
    static let silhouettePath = ["__cdn", "static", "silhouette"]

    static func url(base: String, userID: String?, size: PictureSize, expiry: Int64, key: [UInt8]) -> String {
        var pairs: [(String, String)] = []
        if let userID { pairs.append(("asid", userID)) }
        pairs += [("height", String(size.height)), ("width", String(size.width)), ("ext", String(expiry))]
        pairs.append(("hash", hash(userID: userID, size: size, expiry: expiry, key: key)))
        let path = (userID == nil ? silhouettePath : profilePath).joined(separator: "/")
        return base + "/" + path + "/?" + FormCoding.query(pairs)
    }

    static func hash(userID: String?, size: PictureSize, expiry: Int64, key: [UInt8]) -> String {
        let message = "\(userID ?? "silhouette")|\(size.width)|\(size.height)|\(expiry)"
        return "Ae" + String(Base64URL.encode(HMACSHA256.authenticationCode(for: message, key: key)).prefix(22))
    }

    /// What a CDN request names, once its signature and expiry are checked.
    struct Target: Sendable {
        let userID: String?
        let size: PictureSize
        let expiry: Int64
    }

    /// Checks a CDN request; the failure is the 403 text.
    static func target(
        segments: [String], query: [(String, String)], now: Int64, key: [UInt8], limit: Int
    ) -> Result<Target, CDNFailure> {
        func value(_ name: String) -> String? { query.first { $0.0 == name }?.1 }
        let isProfile = segments == profilePath
        guard isProfile || segments == silhouettePath else { return .failure(.notFound) }
        guard let widthText = value("width"), let width = Int(widthText), (1...limit).contains(width),
            let heightText = value("height"), let height = Int(heightText), (1...limit).contains(height),
            let expiryText = value("ext"), let expiry = Int64(expiryText), let hash = value("hash")
        else { return .failure(.badRequest) }
        let userID = isProfile ? value("asid") : nil
        if isProfile && userID == nil { return .failure(.badRequest) }
        let size = PictureSize(width: width, height: height)
        let expected = self.hash(userID: userID, size: size, expiry: expiry, key: key)
        guard constantTimeEquals(Array(hash.utf8), Array(expected.utf8)) else { return .failure(.signatureMismatch) }
        guard now < expiry else { return .failure(.expired) }
        return .success(Target(userID: userID, size: size, expiry: expiry))
    }

    /// Why the CDN refused a request.
    enum CDNFailure: Error {
        case notFound, badRequest, signatureMismatch, expired

        var status: Int {
            switch self {
            case .notFound: return 404
            case .badRequest: return 400
            case .signatureMismatch, .expired: return 403
            }
        }

        var text: String {
            switch self {
            case .notFound: return "Not Found"
            case .badRequest: return "Bad URL"
            case .signatureMismatch: return "URL signature mismatch"
            case .expired: return "URL signature expired"
            }
        }
    }
}
