@testable import FBSessionsAPI
import Testing

/// ``RenderedBodies``: a kept body is reused only for an equal value, and the memo stays within its limit.
@Suite struct RenderedBodiesTests {
    private final class Renders: @unchecked Sendable {
        var count = 0
    }

    @Test func aBodyIsReusedOnlyForAnEqualValue() {
        let bodies = RenderedBodies<String, String>(limit: 8)
        let renders = Renders()
        let render = { (value: String) -> [UInt8] in
            renders.count += 1
            return Array(value.utf8)
        }
        #expect(bodies.body("a", for: "open", render: render) == Array("open".utf8))
        #expect(bodies.body("a", for: "open", render: render) == Array("open".utf8))
        #expect(renders.count == 1, "the second call reused the body")
        #expect(bodies.body("a", for: "closed", render: render) == Array("closed".utf8), "a changed value is rendered")
        #expect(bodies.body("b", for: "open", render: render) == Array("open".utf8))
        #expect(renders.count == 3, "another key is rendered on its own")
        #expect(bodies.body("a", for: "open", render: render) == Array("open".utf8), "never the body of another value")
        #expect(renders.count == 4)
    }

    @Test func itKeepsAtMostItsLimit() {
        let bodies = RenderedBodies<Int, Int>(limit: 4)
        for key in 0..<10 {
            _ = bodies.body(key, for: key) { [UInt8(truncatingIfNeeded: $0)] }
            #expect(bodies.count <= 4)
        }
        #expect(bodies.body(9, for: 9) { _ in [] } == [9], "the newest key is kept")
    }
}
