import Queue
import Testing

@Suite("JobError")
struct JobErrorTests {
    @Test(
        "retried: output, network, lease and internal errors",
        arguments: ["output_unwritable", "lease_lost", "internal", "network"]
    )
    func retryable(_ code: String) {
        #expect(JobError.isRetryable(code))
        #expect(JobError(code: code, message: "m").retryable)
        #expect(JobError(code: code, message: "m", retryable: false).retryable == false, "an explicit flag wins")
    }

    @Test(
        "not retried: input, range, preset and decode errors",
        arguments: [
            "input_not_found", "input_unreadable", "input_unsupported", "range_out_of_bounds", "preset_unknown",
            "decode_failed",
        ]
    )
    func notRetryable(_ code: String) {
        #expect(JobError.isRetryable(code) == false)
        #expect(JobError(code: code, message: "m").retryable == false)
        #expect(JobError(code: code, message: "m", retryable: true).retryable, "an explicit flag wins")
    }

    @Test("description is code: message")
    func description() {
        #expect(
            JobError(code: "input_not_found", message: "/data/in.mov does not exist").description
                == "input_not_found: /data/in.mov does not exist"
        )
    }
}
