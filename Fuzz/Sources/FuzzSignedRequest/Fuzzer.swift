import CFuzzerDriver
import FBSessionsCore

/// Facebook's `signed_request` (deauthorize and data-deletion callbacks): split and base64url-decoded, the
/// signature checked, and the payload parsed whether or not it checked (so the JSON reader is fuzzed too).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSignedRequest(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let envelope = try? SignedRequest.Envelope(parsing: text) else { return 0 }
    _ = envelope.isSigned(withSecret: "fuzz-secret")
    _ = try? envelope.contents()
    return 0
}

/// The entry point SwiftPM's link expects (see Package.swift): libFuzzer's driver with this fuzzer's callback.
@_cdecl("FuzzSignedRequest_main")
public func fuzzSignedRequestMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { data, size in fuzzSignedRequest(data, size) }
}
