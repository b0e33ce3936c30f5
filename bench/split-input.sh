# Sourced by bench/split.sh and bench/s3.sh: `split_input` prints the path of their shared
# input, made once into bench/out/ (about 2.2 GB): testsrc2 1920x1080 at 30 fps with mild temporal
# noise (so that it is not trivially compressible) and a sine, 120 s, a keyframe every 2 s, x264
# ultrafast CRF 18. Run from the repository's root.
split_input() {
    local input=bench/out/split-input-1920x1080-30fps-120s.mp4
    mkdir -p bench/out
    if [ ! -f "$input" ]; then
        echo "generating $input ..." >&2
        ffmpeg -y -nostdin -v error \
            -f lavfi -i "testsrc2=size=1920x1080:rate=30:duration=120,noise=alls=8:allf=t" \
            -f lavfi -i "sine=frequency=440:sample_rate=48000:duration=120" \
            -map 0:v -map 1:a -c:v libx264 -preset ultrafast -crf 18 -pix_fmt yuv420p -g 60 \
            -c:a aac -b:a 128k -ac 2 -shortest -movflags +faststart "$input.partial.mp4"
        mv "$input.partial.mp4" "$input"
    fi
    realpath "$input"
}
