/// Latency, faults, usage headers, counters and switches.
extension Emulator {
    /// Delays every answer of `endpoint` (or of every endpoint without its own setting, when nil). The wait holds
    /// no server thread.
    /// - Parameters:
    ///   - latency: the delay; `.zero` removes it.
    ///   - endpoint: the endpoint, or nil for the default.
    public func setLatency(_ latency: Duration, for endpoint: GraphEndpoint? = nil) {
        state.withStore { store in
            if let endpoint {
                store.latency[endpoint] = latency
            } else {
                store.defaultLatency = latency
            }
        }
    }

    /// Makes the next `count` calls of `endpoint` fail with `fault`; later faults queue behind earlier ones.
    /// Counters still count faulted calls.
    /// - Parameters:
    ///   - fault: what to serve instead of the real answer.
    ///   - endpoint: the endpoint.
    ///   - count: how many calls, at least 1.
    public func injectFault(_ fault: GraphFault, endpoint: GraphEndpoint, count: Int = 1) {
        guard count > 0 else { return }
        state.withStore { $0.faults[endpoint, default: []].append(PendingFault(fault: fault, remaining: count)) }
    }

    /// Removes every pending fault.
    public func clearFaults() {
        state.withStore { $0.faults = [:] }
    }

    /// The faults still pending for `endpoint`, with how many calls each has left.
    public func pendingFaults(for endpoint: GraphEndpoint) -> [(fault: GraphFault, remaining: Int)] {
        state.withStore { store in (store.faults[endpoint] ?? []).map { ($0.fault, $0.remaining) } }
    }

    /// Sets the `x-app-usage` levels for one app, or the default for all apps without their own.
    public func setAppUsage(_ usage: AppUsage, appID: String? = nil) {
        state.withStore { store in
            if let appID {
                store.usage[appID] = usage
            } else {
                store.defaultUsage = usage
            }
        }
    }

    /// How many requests `endpoint` received since the last reset (faulted ones included).
    public func callCount(_ endpoint: GraphEndpoint) -> Int {
        state.withStore { $0.counters[endpoint] ?? 0 }
    }

    /// Every endpoint's request count since the last reset (endpoints never called are 0).
    public var callCounts: [GraphEndpoint: Int] {
        state.withStore { store in
            Dictionary(uniqueKeysWithValues: GraphEndpoint.allCases.map { ($0, store.counters[$0] ?? 0) })
        }
    }

    /// Sets every counter to zero.
    public func resetCounters() {
        state.withStore { $0.counters = [:] }
    }

    /// Whether error bodies leave out `error_subcode`, as real Graph sometimes does. Default false.
    public var omitsErrorSubcode: Bool {
        get { state.withStore { $0.omitErrorSubcode } }
        set { state.withStore { $0.omitErrorSubcode = newValue } }
    }

    /// Whether successful DELETEs answer a bare `true` instead of `{"success":true}`. Default false.
    public var answersBareTrueOnDelete: Bool {
        get { state.withStore { $0.bareTrueOnDelete } }
        set { state.withStore { $0.bareTrueOnDelete = newValue } }
    }
}
