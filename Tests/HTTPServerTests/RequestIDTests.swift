import Testing

@testable import HTTPServer

@Suite struct RequestIDTests {
    @Test func freshIDsAre32HexDigitsAndNeverRepeat() {
        var seen = Set<String>()
        for _ in 0..<20_000 {
            let id = RequestIDs.fresh()
            #expect(id.utf8.count == 32)
            #expect(id.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) })
            seen.insert(id)
        }
        #expect(seen.count == 20_000)
    }

    @Test func aWellFormedClientIDIsKept() {
        #expect(RequestIDs.accept("abc-123") == "abc-123")
        #expect(RequestIDs.accept("bad id") != "bad id")
    }
}
