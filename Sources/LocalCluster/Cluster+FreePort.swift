#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension Cluster {
    /// A TCP port on 127.0.0.1 that is free right now: binds port 0, reads the port the kernel chose, closes.
    ///
    /// Another process may take the port before the server binds it; callers that must not fail retry with
    /// another port.
    /// - Returns: a port number; a random one from 49152...60999 in the unlikely case that the socket calls
    ///   fail.
    public static func freePort() -> Int {
        #if canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else {
            return Int.random(in: 49_152...60_999)
        }
        defer { close(descriptor) }

        var address = sockaddr_in()
        #if canImport(Darwin)
        address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
        #endif
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(descriptor, socketAddress, length) == 0 && getsockname(descriptor, socketAddress, &length) == 0
            }
        }
        guard bound else {
            return Int.random(in: 49_152...60_999)
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
