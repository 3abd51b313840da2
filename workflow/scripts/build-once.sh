# Sourced by a set-up rule's shell before it builds into resources_dir, which runs from other
# working directories share: waits for any other run building the same directory, and ends the
# job at once when that run has meanwhile built every output.
#     usage: source build-once.sh OUTPUT...
# The lock is held until the job's shell exits (its descriptor is inherited by nothing else).
build_dir=$(dirname "$1")
mkdir -p "$build_dir"
exec 9>>"$build_dir/.build.lock"
flock 9
built=1
for output in "$@"; do
    [ -s "$output" ] || built=0
done
if [ "$built" = 1 ]; then
    echo "build-once: another run has built $build_dir meanwhile; nothing to do"
    exit 0
fi
