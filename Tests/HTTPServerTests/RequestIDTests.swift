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

@Suite("libmicrohttpd's panic hook")
struct LibraryPanicTests {
    /// Only the quiesce race (the listen socket already out of a worker's epoll set) may return; every other
    /// panic, and one without a reason, still aborts.
    @Test func onlyTheQuiesceRaceIsLetThrough() {
        #expect(LibraryPanic.isHarmless(reason: "Failed to remove listen FD from epoll set.\n"))
        #expect(!LibraryPanic.isHarmless(reason: "Failed to add listen FD to epoll set.\n"))
        #expect(!LibraryPanic.isHarmless(reason: "Close socket failed.\n"))
        #expect(!LibraryPanic.isHarmless(reason: nil))
    }
}
