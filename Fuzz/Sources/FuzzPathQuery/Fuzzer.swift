import CFuzzerDriver
@testable import FBSessionsAPI

/// Raw request targets: the path matched against every route template (percent-decoding each parameter), and
/// the query string parsed, as the router and the fast path do for each request. The input is the target (`/path?query`).
let templates = [
    "/v1/sessions/{id}", "/v1/sessions/{id}/picture", "/v1/owners/{owner}/sessions", "/v1/owners/{owner}/active",
    "/v1/facebook/{facebook_app_id}/data-deletion", "/v1/facebook/data-deletion/{confirmation_code}", "/healthz",
].map(PathTemplate.init)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPathQuery(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let target = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let question = target.firstIndex(of: "?")
    let path = question.map { String(target[..<$0]) } ?? target
    let query = question.map { String(target[target.index(after: $0)...]) } ?? ""
    _ = PathTemplate.segmentCount(of: path)
    for template in templates {
        _ = template.match(path)
    }
    if let pairs = QueryString.parse(query) {
        for pair in pairs { _ = pair.name.utf8.count + pair.value.utf8.count }
    }
    _ = PercentDecoding.decode(Substring(target), plusIsSpace: true)
    return 0
}

/// The entry point SwiftPM's link expects (see Package.swift): libFuzzer's driver with this fuzzer's callback.
@_cdecl("FuzzPathQuery_main")
public func fuzzPathQueryMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { data, size in fuzzPathQuery(data, size) }
}
