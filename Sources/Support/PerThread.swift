import Foundation

/// One object per thread, made on first use and released when its thread ends: for a memo that the hot path reads
/// and writes with no lock, because no other thread ever sees it.
///
/// Each instance takes one POSIX thread-specific key for the life of the process (there are at least 128, and the
/// key is never deleted), so make them only as `static let`s.
public final class PerThread<Value: AnyObject>: Sendable {
    private let key: pthread_key_t
    private let make: @Sendable () -> Value

    /// - Parameter make: Makes the calling thread's object, on its first use there.
    public init(_ make: @escaping @Sendable () -> Value) {
        var key = pthread_key_t()
        // The destructor runs when a thread that has an object ends, and releases it.
        let status = pthread_key_create(&key) { raw in
            if let raw { Unmanaged<AnyObject>.fromOpaque(raw).release() }
        }
        precondition(status == 0, "pthread_key_create failed: \(status)")
        self.key = key
        self.make = make
    }

    /// The calling thread's object.
    public var value: Value {
        if let raw = pthread_getspecific(key) { return Unmanaged<Value>.fromOpaque(raw).takeUnretainedValue() }
        let made = make()
        pthread_setspecific(key, Unmanaged.passRetained(made as AnyObject).toOpaque())  // balanced by the key's destructor
        return made
    }
}
