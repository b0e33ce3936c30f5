import Foundation

/// A WebM whose one VP9 track is encrypted (WebM encryption: a `ContentEncryption` with a key
/// id, as a packager writes it), written here byte by byte since the ffmpeg CLI cannot encrypt
/// Matroska. One block of noise behind the encrypted-frame signal byte and its IV: what a player
/// without the key sees.
enum EncryptedWebM {
    static func make() -> Data {
        let keyID = Data((1...16).map { UInt8($0) })
        let track = element(
            0xAE,
            [
                element(0xD7, uint(1)), element(0x73C5, uint(1)), element(0x83, uint(1)),
                element(0x86, Data("V_VP9".utf8)),
                element(0xE0, [element(0xB0, uint(360)), element(0xBA, uint(240))]),
                element(
                    0x6D80,
                    [
                        element(
                            0x6240,
                            [
                                element(0x5031, uint(0)), element(0x5032, uint(1)), element(0x5033, uint(1)),
                                element(
                                    0x5035,
                                    [
                                        element(0x47E1, uint(5)), element(0x47E2, keyID),
                                        element(0x47E7, [element(0x47E8, uint(1))]),
                                    ]
                                ),
                            ]
                        )
                    ]
                ),
            ]
        )
        var generator = SystemRandomNumberGenerator()
        // Track 1, time 0, a keyframe; then the encrypted-frame signal (1), an 8-byte IV and noise.
        let block =
            Data([0x81, 0x00, 0x00, 0x80, 0x01])
            + Data((0..<200).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let segment = element(
            0x1853_8067,
            [
                element(0x1549_A966, [element(0x2A_D7B1, uint(1_000_000)), element(0x4D80, Data("jobctl-test".utf8))]),
                element(0x1654_AE6B, [track]),
                element(0x1F43_B675, [element(0xE7, uint(0)), element(0xA3, block)]),
            ]
        )
        let header = element(
            0x1A45_DFA3,
            [
                element(0x4286, uint(1)), element(0x42F7, uint(1)), element(0x42F2, uint(4)), element(0x42F3, uint(8)),
                element(0x4282, Data("webm".utf8)), element(0x4287, uint(4)), element(0x4285, uint(2)),
            ]
        )
        return header + segment
    }

    /// An EBML element: its id's bytes, its size as a variable-length integer, its payload.
    static func element(_ id: UInt32, _ payload: Data) -> Data {
        var bytes = Data()
        var started = false
        for shift in stride(from: 24, through: 0, by: -8) {
            let byte = UInt8(truncatingIfNeeded: id >> UInt32(shift))
            if byte != 0 || started {
                bytes.append(byte)
                started = true
            }
        }
        let size = UInt64(payload.count)
        // Eight bytes of size: 0x01 then seven.
        bytes.append(0x01)
        for shift in stride(from: 48, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: size >> UInt64(shift)))
        }
        return bytes + payload
    }

    static func element(_ id: UInt32, _ children: [Data]) -> Data { element(id, children.reduce(Data(), +)) }

    static func uint(_ value: UInt64) -> Data {
        var bytes = Data()
        var started = false
        for shift in stride(from: 56, through: 0, by: -8) {
            let byte = UInt8(truncatingIfNeeded: value >> UInt64(shift))
            if byte != 0 || started || shift == 0 {
                bytes.append(byte)
                started = true
            }
        }
        return bytes
    }
}
