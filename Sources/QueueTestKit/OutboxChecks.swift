import Foundation
import Queue
import Testing

/// The checks of `WebhookOutboxConformance.Check`, one function each. Every check starts on an
/// empty database with the clock at `TestClock.defaultStart`, and asserts exact values.
enum OutboxChecks {
    static let retryableError = JobError(code: .internalError, message: "the encoder crashed", retryable: true)
    static let finalError = JobError(code: .inputNotFound, message: "/data/in.mov does not exist", retryable: false)
}
