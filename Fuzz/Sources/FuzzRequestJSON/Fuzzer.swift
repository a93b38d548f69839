import CFuzzerDriver
import Foundation
@testable import FBSessionsAPI
@testable import FBSessionsCore

/// Request bodies as the routes decode them: `POST /v1/sessions` (LoginRequest, with its unknown-field check),
/// `POST /v1/login-urls`, `PUT /v1/owners/{owner}/active`, then the shared validators on whatever decoded.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequestJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let body = Data(bytes: data, count: size)
    let decoder = JSONDecoder()
    if let login = try? decoder.decode(LoginRequest.self, from: body) {
        _ = try? Validation.owner(login.owner)
        _ = login.slot.map { $0 + 0 }
    }
    if let url = try? decoder.decode(LoginURLRoutes.Body.self, from: body) {
        _ = try? Validation.owner(url.owner)
    }
    if let activate = try? decoder.decode(OwnerRoutes.ActivateRequest.self, from: body) {
        _ = try? Validation.sessionID(activate.sessionID, field: "session_id")
    }
    if let text = String(data: body, encoding: .utf8) {
        _ = Session.isWellFormedID(text)
        _ = try? EventCursor(parsing: text)
        _ = APIKeyText.id(in: text)
    }
    return 0
}

/// The entry point SwiftPM's link expects (see Package.swift): libFuzzer's driver with this fuzzer's callback.
@_cdecl("FuzzRequestJSON_main")
public func fuzzRequestJSONMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { data, size in fuzzRequestJSON(data, size) }
}
