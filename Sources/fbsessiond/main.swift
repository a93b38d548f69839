import Crypto
import Foundation
import HTTPServer

// Everything lives in other files: code here is main-actor code, and nothing a C library calls may be.
// The allocator's settings, before any other thread starts (docs/performance.md, "The allocator").
ProcessMemory.configure()
// OpenSSL keeps its state until the process ends: its atexit cleanup races with threads still running (Crypto).
OpenSSLLifetime.keepUntilExit()
exit(await CommandLineTool.main(Array(CommandLine.arguments.dropFirst())))
