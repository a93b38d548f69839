/// An error from the emulator's Swift API (unknown app, user or token; bad argument).
public struct EmulatorError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, in words safe to log (never a token or secret).
    public let message: String

    init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { "GraphEmulator: \(message)" }
}
