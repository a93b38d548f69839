import Crypto
import Dispatch
import FBSessionsCore
import Foundation
import Postgres
import Support
import Synchronization

/// What the triggers announce (migrations 0008 and 0009) and what each announcement drops: the tokens of sessions
/// (`s`), owners (`o`), API keys (`k`) and pictures (`p`).
extension ExactCache {
    /// Drops what an announcement names (`*`: everything).
    func invalidate(_ payload: String) {
        // The keys' observers first: a request that finds a key's liveness dropped below finds whatever the
        // observers cached about the key forgotten too.
        tellKeyObservers(announcedIn: payload)
        guarded.withLock { state in
            state.statistics.invalidations += 1
            for token in payload.split(separator: ",") {
                if token == "*" {
                    state.log.breakStream()
                    removeAll(&state)
                    return
                }
                let key = String(token)
                state.log.announce(key)
                state.entries.remove(Self.entryKey(announcedAs: key))
                if state.liveKeys.remove(key) != nil { liveKeyRemovals.add(1, ordering: .releasing) }
            }
        }
    }

    /// Tells the observers of announced keys about the keys an announcement names (`k<id>`), or that every key may
    /// have changed (`*`).
    private func tellKeyObservers(announcedIn payload: String) {
        // Most announcements name sessions and owners only: those cost a scan of the payload, nothing allocated.
        guard payload.utf8.first == UInt8(ascii: "k") || payload.utf8.first == UInt8(ascii: "*")
            || payload.utf8.contains(UInt8(ascii: "k")) && payload.contains(",k")
        else { return }
        var keyIDs: [Substring] = []
        for token in payload.split(separator: ",") {
            if token == "*" { return tellKeyObservers(nil) }
            if token.utf8.first == UInt8(ascii: "k") { keyIDs.append(token.dropFirst()) }
        }
        for keyID in keyIDs { tellKeyObservers(String(keyID)) }
    }

    /// Calls `observer` with the id of every API key an announcement names (a change of its row: added, revoked,
    /// its rate limit changed), and with nil when any key may have changed (`*`, or the listener's connection lost).
    /// It is called on the thread that handles the announcement, outside the cache's lock, before the announcement
    /// drops anything (the key's liveness included) and so before a fence sent after it can pass: a request that
    /// arrived after the change committed finds it done.
    public func observeKeyAnnouncements(_ observer: @escaping @Sendable (_ keyID: String?) -> Void) {
        keyObservers.withLock { $0.append(observer) }
    }

    /// Tells the observers of announced keys; never under the cache's lock.
    func tellKeyObservers(_ keyID: String?) {
        let observers = keyObservers.withLock { $0 }
        for observer in observers { observer(keyID) }
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
        if let token = hashedTokens.withLock({ $0[parts] }) { return token }
        let (prefix, text) = parts.prefixAndText
        let token = prefix + Hex.encode(SHA256.hash(text).prefix(8))
        hashedTokens.withLock { tokens in
            if tokens.count >= 4096 { tokens.removeAll(keepingCapacity: true) }
            tokens[parts] = token
        }
        return token
    }
}
