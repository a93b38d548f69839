import FBSessionsAPI
import FBSessionsCore
import FBSessionsStorage
import Foundation
import HTTPServer

/// The fast path's answers, each the route's answer made from the cache's entries instead of the database's rows.
extension FastPath {
    /// Whose list a kept body is: the app and the owner.
    struct ListKey: Hashable, Sendable {
        let appID: String
        let owner: String
    }

    /// A status whose validation mode needs no call to Graph now: the body kept beside the cached session when it
    /// was rendered from the session shown in the same state, else rendered and kept there for the next request.
    func status(_ id: String, app: App, mode: SessionService.ValidateMode, hint: CacheHint) -> Response? {
        // The shared session's deciding fields are read in place: a copy of the whole `Session` would retain each of
        // its strings and arrays.
        guard let held = cache.session(id: id, appID: app.id, hint: hint) else { return nil }
        let standing = SessionService.Standing(
            state: held.session.state, loginKind: held.session.loginKind, validatedAt: held.session.validatedAt,
            storedAction: held.session.storedAction)
        guard let state = sessions.stateWithoutGraph(standing, mode: mode, now: Date()) else { return nil }
        if let kept = held.rendered, kept.shownState == state { return .json(status: 200, body: kept.body) }
        var shown = held.session
        shown.state = state
        let body = Answers.statusBody(shown, validation: .cached)
        cache.keepRendered(RenderedBody(shownState: state, body: body), from: held)
        return .json(status: 200, body: body)
    }

    /// An owner's list, with the body last rendered from an equal list.
    func list(_ owner: String, app: App, hint: CacheHint) -> Response? {
        guard let stored = cache.sessions(owner: owner, appID: app.id, hint: hint) else { return nil }
        let body = lists.body(ListKey(appID: app.id, owner: owner), for: sessions.shown(stored), render: Answers.listBody)
        return .json(status: 200, body: body)
    }

    /// A picture (bytes or 304) or its description, when the cache holds the live session and the picture's fresh
    /// description, and, for the bytes, the picture service's memory holds them.
    ///
    /// A client that revalidates its copy asks the same again: this thread's memo of its last 304
    /// (``LoopMemo/NotModified``) answers it with no key built, no lookup and no ETag compared.
    func picture(
        _ id: String, app: App, query: Answers.PictureQuery, ifNoneMatch: String?, hint: CacheHint
    ) -> Response? {
        guard let pictures, let held = cache.session(id: id, appID: app.id, hint: hint), held.session.state != .closed
        else { return nil }
        let now = Date()
        let memo = ifNoneMatch == nil ? nil : LoopMemo.onThisThread.notModified
        if let memo, let ifNoneMatch, let response = memo.response(held, query.size, ifNoneMatch, now: now) {
            pictures.countNotModified()
            return response
        }
        let key = PictureService.key(
            appID: app.id, facebookUserID: held.session.facebookUserID, loginKind: held.session.loginKind, size: query.size)
        guard let entry = cache.picture(key),
            let reply = pictures.answer(
                from: entry.picture, key: key, ifNoneMatch: ifNoneMatch, needsBytes: query.wantsBytes, now: now)
        else { return nil }
        guard query.wantsBytes else { return try? Answers.pictureDescription(reply) }
        let response = Answers.picture(reply)
        if reply.outcome == .notModified, let memo, let ifNoneMatch {
            memo.remember(held, query.size, ifNoneMatch, entry: entry, response: response, age: reply.age)
        }
        return response
    }
}
