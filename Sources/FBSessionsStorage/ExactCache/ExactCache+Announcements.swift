import Crypto
import Dispatch
import FBSessionsCore
import Foundation
import Postgres
import Synchronization

/// What the triggers announce (migrations 0008 and 0009) and what each announcement drops: the tokens of sessions
/// (`s`), owners (`o`), API keys (`k`) and pictures (`p`).
extension ExactCache {
    /// Drops what an announcement names (`*`: everything).
    func invalidate(_ payload: String) {
        lock.withLock {
            statistics.invalidations += 1
            for token in payload.split(separator: ",") {
                if token == "*" {
                    log.breakStream()
                    removeAll()
                    return
                }
                let key = String(token)
                log.announce(key)
                entries.remove(Self.entryKey(announcedAs: key))
                if liveKeys.remove(key) != nil { liveKeyRemovals.add(1, ordering: .releasing) }
            }
        }
    }


    /// The token that announces a session (`s` and its id).
    static func sessionKey(_ id: String) -> String { "s" + id }

    /// The key of the entry an announced token names. A session is kept under its bare id, not its token: the lookups
    /// on the hot path then build no string. The id (`ses_...`) never equals another entry's key (`o` or `p` and 16
    /// hex digits), and even if an operator's id did, a token would only drop one entry too many: every lookup checks
    /// the entry's kind and id.
    static func entryKey(announcedAs token: String) -> String {
        token.utf8.first == UInt8(ascii: "s") ? String(token.dropFirst()) : token
    }

    /// The token that announces an API key (`k` and its id).
    static func liveKeyKey(_ id: String) -> String { "k" + id }

    /// The token that announces an owner (`fbs_owner_token` in migration 0008): `o` and the first 16 hex digits
    /// of SHA-256 of `app:owner`. Two owners whose tokens collide only drop each other's entries.
    func ownerKey(appID: String, owner: String) -> String {
        hashedToken(.owner(appID: appID, owner: owner))
    }

    /// The token that announces a cached picture (`fbs_picture_token` in migration 0009): `p` and the first 16 hex
    /// digits of SHA-256 of `app:facebook user:size`.
    func pictureKey(_ key: PictureKey) -> String {
        hashedToken(.picture(key))
    }

    /// The prefix and the first 16 hex digits of SHA-256 of the text (``TokenInput/prefixAndText``), remembered for
    /// the last few thousand inputs: a hot owner or picture then costs a dictionary lookup per request, not a digest.
    func hashedToken(_ parts: TokenInput) -> String {
        if let token = tokenLock.withLock({ hashedTokens[parts] }) { return token }
        let (prefix, text) = parts.prefixAndText
        let token = prefix + Hex.encode(SHA256.hash(text).prefix(8))
        tokenLock.withLock {
            if hashedTokens.count >= 4096 { hashedTokens.removeAll(keepingCapacity: true) }
            hashedTokens[parts] = token
        }
        return token
    }
}
