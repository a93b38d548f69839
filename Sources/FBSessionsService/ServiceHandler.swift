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

    /// With tracing on, the request's sampling is decided first: a sampled request goes to the router, whose
    /// ``TraceMiddleware`` records its server span; an unsampled one may be answered by the fast path as always
    /// (docs/architecture.md, "Traces and the fast path"). With tracing off, one nil check.
    public func inspect(_ head: RequestHead) -> HeadDecision {
        guard let tracer = router.tracer else { return fastPath?.inspect(head) ?? router.inspect(head) }
        let decision = Router.decide(head, tracer)
        if decision.isSampled { return router.inspect(head, trace: decision) }
        return fastPath?.inspect(head) ?? router.inspect(head, trace: decision)
    }

    public func completed(_ record: ExchangeRecord) {
        router.completed(record)
    }
}
