// The JobStore conformance suite goes here.
