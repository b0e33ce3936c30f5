import Foundation
import Queue
import Testing

/// The checks of `JobStoreConformance.Check`, one function each. Every check starts on an empty
/// database with the clock at `TestClock.defaultStart`, and asserts exact values.
enum Checks {
    static let workerA = Harness.workerA
    static let workerB = Harness.workerB

    static let videoTrack = JobTrack(
        index: 0,
        sourceIndex: 0,
        mediaType: "video",
        status: .reading,
        codec: "h264",
        read: 120,
        written: 118
    )
    static let audioTrack = JobTrack(
        index: 1,
        sourceIndex: 2,
        mediaType: "audio",
        status: .reading,
        codec: "aac",
        read: 88_200,
        written: 86_016
    )
    static let doneTracks = [
        JobTrack(
            index: 0,
            sourceIndex: 0,
            mediaType: "video",
            status: .completed,
            codec: "h264",
            read: 90,
            written: 90
        ),
        JobTrack(
            index: 1,
            sourceIndex: 1,
            mediaType: "audio",
            status: .completed,
            codec: nil,
            read: 132_300,
            written: 132_300
        ),
    ]

    static let retryableError = JobError(code: .internalError, message: "the encoder crashed", retryable: true)
    static let finalError = JobError(code: .inputNotFound, message: "/data/in.mov does not exist", retryable: false)
}
