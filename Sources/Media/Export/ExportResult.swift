import JobctlCore

/// What a completed export produced (`result` in the job JSON, `export --json`).
public struct ExportResult: Sendable, Codable, Hashable {
    /// The output path.
    public var output: String
    public var bytes: Int64
    /// Seconds: the longest track of the output.
    public var duration: Double
    /// The part of the asset the output holds, in seconds from the asset's start. Differs from
    /// the requested range when it was clipped to the asset, or (passthrough) started at a
    /// keyframe before the requested start.
    public var actualRange: RangeSeconds
    public var tracks: [Track]
    /// What a person should know about an export that completed: the input's headers did not
    /// say how long it is, so it holds what the file held (absent when there is nothing to say).
    public var warnings: [String]?
    /// A split export's segments (issue 27): absent for an export made in one piece.
    public var segments: [SegmentReport]?

    public struct RangeSeconds: Sendable, Codable, Hashable {
        public var start: Double
        public var duration: Double
    }

    /// One track of the output.
    public struct Track: Sendable, Codable, Hashable {
        /// The stream's index in the output file.
        public var index: Int
        /// The asset track it comes from.
        public var sourceIndex: Int
        public var mediaType: MediaType
        public var codec: String
        public var width: Int?
        public var height: Int?
        public var sampleRate: Int?
        public var channels: Int?
        /// Video frames encoded (a segment of a split export: its own, pre- and post-roll left
        /// out, as the source decoded to them).
        public var frames: Int64?
        /// Audio samples encoded.
        public var samples: Int64?
        /// Packets copied (passthrough).
        public var packets: Int64?
        /// Seconds.
        public var duration: Double
    }
}

/// The status and counters of one track of a running export (`tracks` in the job JSON).
public struct TrackProgress: Sendable, Codable, Hashable {
    public var index: Int
    public var sourceIndex: Int
    public var mediaType: MediaType
    public var status: Status
    public var codec: String?
    /// Frames (video), samples (audio) or packets (copied tracks) read from the asset…
    public var read: Int64
    /// …and written to the output.
    public var written: Int64
}
