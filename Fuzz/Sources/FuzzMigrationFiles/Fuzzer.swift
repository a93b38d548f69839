import CFuzzerDriver
import Foundation
import FBSessionsStorage

/// The migration folder reader: the input's first line is a file name, the rest its contents, written into a
/// fresh folder (beside a valid 0001) and read back with `Migration.load(from:)`.
let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fbs-fuzz-migrations-\(getpid())")

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMigrationFiles(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let newline = bytes.firstIndex(of: 0x0A) ?? bytes.endIndex
    let name = String(decoding: bytes[..<newline], as: UTF8.self)
    // A name must stay one file inside the folder: the reader is given a folder, never paths.
    guard !name.isEmpty, name.utf8.count < 200, !name.contains("/"), name != ".", name != "..",
        !name.contains("\0")
    else { return 0 }
    try? FileManager.default.removeItem(at: folder)
    try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    _ = FileManager.default.createFile(atPath: folder.appendingPathComponent("0001_base.sql").path, contents: Data("SELECT 1;".utf8))
    let contents = newline < bytes.endIndex ? Data(bytes[(newline + 1)...]) : Data()
    _ = FileManager.default.createFile(atPath: folder.appendingPathComponent(name).path, contents: contents)
    if let migrations = try? Migration.load(from: folder) {
        for migration in migrations { _ = migration.fileName + migration.sql }
    }
    return 0
}

/// The entry point SwiftPM's link expects (see Package.swift): libFuzzer's driver with this fuzzer's callback.
@_cdecl("FuzzMigrationFiles_main")
public func fuzzMigrationFilesMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { data, size in fuzzMigrationFiles(data, size) }
}
