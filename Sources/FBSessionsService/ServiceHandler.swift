import FBSessionsAPI
import FBSessionsFastPath
import HTTPServer

/// What the HTTP server serves: the fast path, when there is an exact cache, in front of the router
/// (docs/architecture.md). A request the fast path does not take goes to the router; both report every exchange to
/// the router's observer.
public struct ServiceHandler: RequestHandler {
    /// Every route.
    public let router: Router
    /// The exact cache's answers, tried first; nil without an exact cache.
    let fastPath: FastPath?

    public func inspect(_ head: RequestHead) -> HeadDecision {
        fastPath?.inspect(head) ?? router.inspect(head)
    }

    public func completed(_ record: ExchangeRecord) {
        router.completed(record)
    }
}
