import CFFmpeg

extension Engine {
    /// What a player shows of the track, from the source's: its language (ISO 639-2, as the
    /// container keeps it; `und` is left out), its name (`title`, and MP4's handler name, which
    /// players list tracks by) and whether it is the default of its kind (MP4's "enabled"
    /// flag, Matroska's FlagDefault), so a two-language file's tracks stay told apart.
    func describe(as track: AssetTrack) {
        let stream = file.stream(streamIndex)
        if let language = track.language, !language.isEmpty, language != "und" {
            av_dict_set(&stream.pointee.metadata, "language", language, 0)
        }
        if let title = track.title, !title.isEmpty {
            av_dict_set(&stream.pointee.metadata, "title", title, 0)
            av_dict_set(&stream.pointee.metadata, "handler_name", title, 0)
        }
        if track.isDefault {
            stream.pointee.disposition |= AV_DISPOSITION_DEFAULT
        } else {
            stream.pointee.disposition &= ~AV_DISPOSITION_DEFAULT
        }
    }
}
