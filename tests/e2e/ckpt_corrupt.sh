#!/usr/bin/env bash
# Checkpoints you can trust: each corruption of a checkpoint from a tiny
# 2-step run is refused by the resume itself (and by `weft ckpt verify`) with
# the file and the tensor or field named and the failed check; --save never
# replaces or deletes what Weft did not write (a foreign folder, a path too
# long to build); a save killed at any point leaves a loadable checkpoint;
# --keep N rotation; --async-save writes the same checkpoint.
source "$(dirname "$0")/lib.sh"
PLAN=${PLAN:-plans/tiny.lua}
DATA=$(make_data)
set=(--set train.steps=2 --set data.train="$DATA" --set batch.micro=2 --set batch.global=4
     --set model.layers=1 --set model.hidden=32 --set model.heads=2 --set model.seq=16)
build_plan run "$PLAN" "${set[@]}"
run_plan run --steps 1 --save "$WORK/step1" >/dev/null
run_plan run --steps 2 --save "$WORK/good" >/dev/null
build_plan half "$PLAN" "${set[@]}" --set precision=fp16
run_plan half --steps 2 --save "$WORK/good16" >/dev/null
check "a fresh checkpoint verifies" "$WEFT" ckpt verify "$WORK/good"
check "an fp16 one too, with its loss scaler state" \
  bash -c '"$1" ckpt verify "$2" | grep -q "fp16 loss scaler: verified"' _ "$WEFT" "$WORK/good16"
check "and has its manifest and marker" test -f "$WORK/good/manifest.json" -a -f "$WORK/good/.weft-checkpoint"

# ---- helpers: byte-level edits of a safetensors file (perl: in Debian's base)
# header_edit FILE PERL-SUBST: edits the JSON header in place, padded with
# spaces to its old length (so no offset moves and the file keeps its size).
header_edit() {
  perl -e 'my ($f, $e) = @ARGV; open(my $h, "+<:raw", $f) or die; local $/; my $all = <$h>;
    my $n = unpack("Q<", substr($all, 0, 8)); my $j = substr($all, 8, $n);
    $_ = $j; eval $e; die $@ if $@; my $k = $_; $k =~ s/ +$//;
    die "edit grew the header\n" if length($k) > $n; $k .= " " x ($n - length($k));
    seek($h, 8, 0); print $h $k; close $h' "$1" "$2"
}
# tensor_at FILE NAME: "BEGIN END" of a tensor's bytes in the file
tensor_at() {
  perl -e 'my ($f, $t) = @ARGV; open(my $h, "<:raw", $f) or die; read($h, my $l, 8);
    my $n = unpack("Q<", $l); read($h, my $j, $n);
    $j =~ /"\Q$t\E":\{[^}]*"data_offsets":\[(\d+),(\d+)\]/ or die "no $t\n";
    print 8 + $n + $1, " ", 8 + $n + $2, "\n"' "$1" "$2"
}
# first_tensor FILE: the tensor whose data comes first
first_tensor() {
  perl -e 'open(my $h, "<:raw", $ARGV[0]) or die; read($h, my $l, 8); read($h, my $j, unpack("Q<", $l));
    $j =~ /"([^"]+)":\{[^}]*"data_offsets":\[0,/ or die; print "$1\n"' "$1"
}
# poke FILE OFFSET HEX...: writes bytes at OFFSET
poke() {
  local f=$1 off=$2; shift 2
  printf "$(printf '\\x%s' "$@")" | dd of="$f" bs=1 seek="$off" conv=notrunc status=none
}
# swap_tensors FILE A B: exchanges two equal-size tensors' bytes
swap_tensors() {
  read -r a0 a1 < <(tensor_at "$1" "$2"); read -r b0 b1 < <(tensor_at "$1" "$3")
  perl -e 'my ($f, $a, $b, $n) = @ARGV; open(my $h, "+<:raw", $f) or die;
    seek($h, $a, 0); read($h, my $x, $n); seek($h, $b, 0); read($h, my $y, $n);
    seek($h, $a, 0); print $h $y; seek($h, $b, 0); print $h $x; close $h' "$1" "$a0" "$b0" $((a1 - a0))
}

# ---- the corruptions: each in a fresh copy of $GOOD, refused by the resume
# of $PROGRAM and by verify
n=0 GOOD=$WORK/good PROGRAM=run
corrupt() {  # corrupt NAME EXPECTED-ERE EDIT...: runs EDIT in the copy's folder
  local name=$1 want=$2; shift 2
  n=$((n + 1))
  local dir="$WORK/bad$n"
  cp -a "$GOOD" "$dir"
  (cd "$dir" && "$@")
  local out rc=0
  out=$(timeout 60 "$WORK/$PROGRAM/launch.sh" --quiet --steps 3 --resume "$dir" 2>&1) || rc=$?
  if [ $rc = 0 ] || [ $rc = 124 ] || ! grep -qE "checkpoint $dir refused: $want" <<<"$out"; then
    check "$name: resume refused naming it ($want)" false
    echo "     rc $rc: $(grep -m1 weft: <<<"$out")"
  else
    check "$name: resume refused: $(grep -o "refused: .*" <<<"$out" | head -c 150)" true
  fi
  out=$(timeout 20 "$WEFT" ckpt verify "$dir" 2>&1) && rc=0 || rc=$?
  check "$name: weft ckpt verify refuses it too" test $rc = 1 -a -n "$(grep -E "$want" <<<"$out")"
}
truncate_model() { truncate -s -100 model.safetensors; }
corrupt "truncated model.safetensors" 'model.safetensors: [0-9]+ bytes but the manifest says [0-9]+ \(truncated' truncate_model
corrupt "damaged header" 'model.safetensors: .*corrupt header: the [0-9]+-byte JSON header does not parse' \
  poke model.safetensors 8 23
corrupt "a tensor missing (renamed)" 'model.safetensors: tensor ln_f.bias is missing' \
  header_edit model.safetensors 's/"ln_f\.bias"/"ln_f.bia_"/'
corrupt "optimizer.safetensors missing" 'optimizer.safetensors: missing' rm optimizer.safetensors
corrupt "a changed shape" 'model.safetensors: tensor h.0.mlp.c_fc.weight has shape \[128,32\] but the manifest says \[32,128\]' \
  header_edit model.safetensors 's/("h\.0\.mlp\.c_fc\.weight":\{"dtype":"F32","shape":\[)32,128\]/${1}128,32]/'
flip_bit() { read -r b _ < <(tensor_at model.safetensors "$(first_tensor model.safetensors)"); poke model.safetensors $((b + 41)) 01; }
first=$(first_tensor "$WORK/good/model.safetensors")
corrupt "one flipped bit in tensor data" "model.safetensors: tensor $first: checksum mismatch" flip_bit
corrupt "two tensors' data swapped" 'model.safetensors: tensor h\.0\.ln_1\.(weight|bias): checksum mismatch' \
  swap_tensors model.safetensors h.0.ln_1.weight h.0.ln_1.bias
corrupt "optimizer from another step mixed in" \
  'optimizer.safetensors: metadata weft_step is 1 but the manifest says 2 \(files from different checkpoints' \
  cp "$WORK/step1/optimizer.safetensors" .
corrupt 'step "abc"' 'manifest.json: step is "abc", not a non-negative integer' \
  sed -i 's/"step":[^,]*,/"step":\t"abc",/' manifest.json
corrupt 'step "-50"' 'manifest.json: step is -50, not a non-negative integer' \
  sed -i 's/"step":[^,]*,/"step":\t-50,/' manifest.json
# fp16: the loss scaler's state travels in the manifest (and the metadata)
GOOD=$WORK/good16 PROGRAM=half
corrupt "an infinite fp16 loss scale" 'manifest.json: loss_scale.scale is infinite, not a finite positive number' \
  sed -i 's/"scale":[^,]*,/"scale":\t1e999,/' manifest.json
corrupt "a partial fp16 scaler state" 'manifest.json: loss_scale.hysteresis is missing, .*partial fp16 loss scaler state' \
  sed -i '/"hysteresis":/d' manifest.json
corrupt "a zero fp16 loss scale in the metadata" 'optimizer.safetensors: metadata weft_loss_scale is "0": not a finite positive number' \
  header_edit optimizer.safetensors 's/"weft_loss_scale":"[^"]*"/"weft_loss_scale":"0"/'
GOOD=$WORK/good PROGRAM=run
fifo() { rm model.safetensors; mkfifo model.safetensors; }
corrupt "a FIFO as model.safetensors (no hang)" 'model.safetensors: is a FIFO, not a regular file' fifo
corrupt "garbage config.json" 'config.json: ([0-9]+ bytes but the manifest says|checksum mismatch)' \
  sh -c 'echo "{garbage" > config.json'
corrupt "config.json changed, same size" 'config.json: checksum mismatch' sed -i 's/gpt2/gpt3/' config.json
nan_weight() { read -r b _ < <(tensor_at model.safetensors wpe.weight); poke model.safetensors $((b + 8)) 00 00 c0 7f; }
corrupt "a NaN weight" 'model.safetensors: tensor wpe.weight holds NaN at element 2' nan_weight
corrupt "config.json a symbolic link out of the folder" 'config.json: is a symbolic link, not a regular file' \
  sh -c "mv config.json '$WORK/outside.json' && ln -s '$WORK/outside.json' config.json"
corrupt "no manifest" 'manifest.json: missing' rm manifest.json
corrupt "a manifest that is not JSON" 'manifest.json: does not parse as JSON' sed -i 's/"files"/files/' manifest.json
# pp 2: a Hugging Face sharded checkpoint (a shard a stage and an index, each
# listed in the manifest): a missing or changed shard or index is refused,
# naming the file
build_plan pp2 "$PLAN" "${set[@]}" --set model.layers=2 --set mesh.pp=2
run_plan pp2 --steps 2 --save "$WORK/goodpp" >/dev/null
check "a pp 2 (sharded) checkpoint verifies" "$WEFT" ckpt verify "$WORK/goodpp"
GOOD=$WORK/goodpp PROGRAM=pp2
corrupt "a shard missing" 'model-00002-of-00002.safetensors: missing' rm model-00002-of-00002.safetensors
corrupt "an optimizer shard truncated" 'optimizer-00001-of-00002.safetensors: [0-9]+ bytes but the manifest says' \
  truncate -s -100 optimizer-00001-of-00002.safetensors
flip_shard() {
  local f=model-00002-of-00002.safetensors; read -r b _ < <(tensor_at $f "$(first_tensor $f)"); poke $f $((b + 5)) 01
}
corrupt "one flipped bit in the second shard" "model-00002-of-00002.safetensors: tensor [^ ]+: checksum mismatch" flip_shard
corrupt "the index missing" 'model.safetensors.index.json: missing' rm model.safetensors.index.json
corrupt "the index changed" 'optimizer.safetensors.index.json: ([0-9]+ bytes but the manifest says|checksum mismatch)' \
  sed -i 's/"exp_avg.wpe.weight":\([[:space:]]*\)"optimizer-00001/"exp_avg.wpe.weight":\1"optimizer-00002/' optimizer.safetensors.index.json
GOOD=$WORK/good PROGRAM=run
# an index that disagrees with its shards, read without a manifest (ckpt diff)
index_bad() {  # index_bad NAME EXPECTED SED-EXPRESSION
  rm -rf "$WORK/badindex"; cp -a "$WORK/goodpp" "$WORK/badindex"
  sed -i "$3" "$WORK/badindex/model.safetensors.index.json"
  local out
  out=$("$WEFT" ckpt diff "$WORK/badindex/model.safetensors" "$WORK/goodpp/model.safetensors" 2>&1) && rc=0 || rc=$?
  check "$1: ckpt diff refuses it ($2)" test $rc != 0 -a -n "$(grep -E "$2" <<<"$out")"
}
index_bad "an index mapping a tensor to the wrong shard" \
  'model-00001-of-00002.safetensors: holds tensor wpe.weight, which model.safetensors.index.json maps to model-00002' \
  's/"wpe.weight":\([[:space:]]*\)"model-00001/"wpe.weight":\1"model-00002/'
index_bad "an index whose total_size is off" 'model.safetensors.index.json: total_size is [0-9]+ but its shards hold' \
  's/"total_size":\([[:space:]]*\)\([0-9]*\)/"total_size":\11\2/'
index_bad "an index naming a shard that is not there" 'model.safetensors.index.json: lists the shard model-00003-of-00002.safetensors, which is missing' \
  's/"wpe.weight":\([[:space:]]*\)"model-00001-of-00002/"wpe.weight":\1"model-00003-of-00002/'
check "the good pp 2 checkpoint resumes" "$WORK/pp2/launch.sh" --quiet --steps 3 --resume "$WORK/goodpp"
check "the good checkpoint still resumes" "$WORK/run/launch.sh" --quiet --steps 3 --resume "$WORK/good"
check "the fp16 one too" "$WORK/half/launch.sh" --quiet --steps 3 --resume "$WORK/good16"
# The same tensors can be another model: config.json is compared with the
# program's own (here the exact GELU instead of the tanh one).
build_plan erf "$PLAN" "${set[@]}" --set model.activation=gelu
out=$("$WORK/erf/launch.sh" --quiet --steps 3 --resume "$WORK/good" 2>&1) && rc=0 || rc=$?
check "a checkpoint of another model (same shapes) is refused by config.json" test $rc != 0 -a -n \
  "$(grep -F 'config.json: activation_function is "gelu_new" in the checkpoint but "gelu" in this program' <<<"$out")"
# weft ckpt diff reads every dimension of a 5-8 dimensional tensor
six() {
  perl -e 'my $j = q({"x":{"dtype":"F32","shape":[1,2,1,2,1,2],"data_offsets":[0,32]}});
    print pack("Q<", length $j), $j, pack("f<*", map { $_ * $ARGV[1] } 1 .. 8)' _ "$2" >"$1"
}
six "$WORK/six_a.safetensors" 1; six "$WORK/six_b.safetensors" 1; six "$WORK/six_c.safetensors" 2
check "ckpt diff: a 6-dimensional tensor equals itself" \
  bash -c '"$1" ckpt diff "$2" "$3" | grep -q "1 tensors: 0 differ beyond bit-identity, 0 missing"' \
  _ "$WEFT" "$WORK/six_a.safetensors" "$WORK/six_b.safetensors"
check "ckpt diff: ... and differs from another" \
  bash -c '! "$1" ckpt diff "$2" "$3" | grep -q "0 differ"' _ "$WEFT" "$WORK/six_a.safetensors" "$WORK/six_c.safetensors"

# ---- outputs never destroy anything
mkdir -p "$WORK/foreign/results"; echo "1,2,3" >"$WORK/foreign/results/r.csv"
out=$(run_plan run --steps 1 --save "$WORK/foreign" 2>&1) && rc=0 || rc=$?
check "--save onto a folder Weft did not write is refused" \
  test $rc != 0 -a -n "$(grep -F "$WORK/foreign exists and was not written by Weft" <<<"$out")"
check "... before training (no step ran)" test -z "$(grep -F "saved" <<<"$out")"
check "... and the user's file is intact" grep -qx "1,2,3" "$WORK/foreign/results/r.csv"
out=$(run_plan run --steps 1 --ckpt "$WORK/foreign" 2>&1) && rc=0 || rc=$?
check "--ckpt onto it is refused too" test $rc != 0 -a -n "$(grep -F "not written by Weft" <<<"$out")"
echo precious >"$WORK/precious.txt"
long="$WORK/$(printf 'p%.0s' {1..200})/$(printf 'q%.0s' {1..200})"
long="$long/$(printf 'r%.0s' {1..4000})"
out=$(run_plan run --steps 1 --save "$long" 2>&1) && rc=0 || rc=$?
check "a --save path too long is refused, not truncated" \
  test $rc != 0 -a -n "$(grep -F "checkpoint path too long" <<<"$out")" -a -z "$(grep saved <<<"$out")"
out=$(run_plan run --steps 1 --save "$WORK/$(printf 'n%.0s' {1..250})" 2>&1) && rc=0 || rc=$?
check "a folder name too long for the file system is refused before training" \
  test $rc != 0 -a -z "$(grep saved <<<"$out")" -a -n "$(grep -F "leaves no room for the temporary" <<<"$out")"
out=$(run_plan run --steps 1 --save "$WORK/nowhere/ck" 2>&1) && rc=0 || rc=$?
check "a --save folder whose parent does not exist is refused before training" \
  test $rc != 0 -a -n "$(grep -F "the folder $WORK/nowhere does not exist" <<<"$out")"
check "... and nothing beside it was touched" grep -qx precious "$WORK/precious.txt"
check "... nor the other checkpoints" "$WEFT" ckpt verify "$WORK/good"

# ---- a save replaces only Weft's own folders, and cleans what killed saves left
cp -a "$WORK/good" "$WORK/again"
mkdir "$WORK/again.tmp-99999" "$WORK/again.old-88888" "$WORK/again.tmp-77777"
touch "$WORK/again.tmp-99999/.weft-checkpoint" "$WORK/again.old-88888/.weft-checkpoint" "$WORK/again.tmp-99999/model.safetensors"
echo mine >"$WORK/again.tmp-77777/notes.txt"  # looks like a leftover, is not Weft's
run_plan run --steps 1 --save "$WORK/again" >/dev/null
check "saving over Weft's own checkpoint replaces it (step 1 now)" \
  bash -c '"$1" ckpt verify "$2" | grep -q "step 1,"' _ "$WEFT" "$WORK/again"
check "leftovers of killed saves (with the marker) are removed" test ! -e "$WORK/again.tmp-99999" -a ! -e "$WORK/again.old-88888"
check "a look-alike folder without the marker is left alone" grep -qx mine "$WORK/again.tmp-77777/notes.txt"

# ---- a save killed between any two of its steps leaves a loadable checkpoint
for phase in written manifest swapped; do
  rm -rf "$WORK/k"; cp -a "$WORK/good" "$WORK/k"
  WEFT_TEST_KILL_IN_SAVE=$phase timeout 60 "$WORK/run/launch.sh" --quiet --steps 1 --save "$WORK/k" \
    >/dev/null 2>&1 && rc=0 || rc=$?
  want=2; [ $phase = swapped ] && want=1  # killed after the swap: the new one is in place
  check "save killed after '$phase': job failed, $WORK/k verifies at step $want" \
    bash -c '[ $1 != 0 ] && "$2" ckpt verify "$3" | grep -q "step $4,"' _ $rc "$WEFT" "$WORK/k" $want
  check "... and the next save cleans what it left" \
    bash -c '"$1" --quiet --steps 1 --save "$2" >/dev/null && [ -z "$(ls -d "$2".tmp-* "$2".old-* 2>/dev/null)" ]' \
    _ "$WORK/run/launch.sh" "$WORK/k"
done
# where the file system cannot exchange two names, a save killed between its
# two renames leaves only DIR.old-N: a resume says so and uses it
mv "$WORK/k" "$WORK/k.old-4242"
out=$("$WORK/run/launch.sh" --steps 1 --resume "$WORK/k" 2>&1) && rc=0 || rc=$?
check "DIR missing, DIR.old-N complete: the resume says so and uses it" test $rc = 0 -a -n \
  "$(grep -F "$WORK/k is missing; resuming from $WORK/k.old-4242" <<<"$out")"
run_plan run --steps 1 --save "$WORK/k" >/dev/null
check "... and the next save puts it back before replacing it" \
  test ! -e "$WORK/k.old-4242" -a -f "$WORK/k/manifest.json"
# kill -9 of the whole job at a random moment of a run that saves every step
build_plan every "$PLAN" "${set[@]}" --set train.steps=100000 --set train.ckpt_every=1
KILLS=${KILLS:-3} bash "$(dirname "$0")/../../bench/ckpt_kill.sh" "$WORK/every/launch.sh" "$WORK/loop" \
  >"$WORK/kill.log" 2>&1 && rc=0 || rc=$?
cat "$WORK/kill.log"
check "kill -9 during periodic saves: every kill left a loadable checkpoint" test $rc = 0

# ---- --keep N: step folders, the newest N kept
run_plan every --steps 5 --ckpt "$WORK/set" --keep 2 >/dev/null
check "--keep 2 keeps the newest two step folders" \
  test "$(cd "$WORK/set" && echo step_*)" = "step_00000004 step_00000005"
check "... each a verified checkpoint" "$WEFT" ckpt verify "$WORK/set/step_00000005"

# ---- --async-save: the state copied at the step boundary, written by a thread
out=$("$WORK/every/launch.sh" --steps 3 --ckpt "$WORK/async" --async-save 2>&1)
run_plan every --steps 3 --ckpt "$WORK/sync" >/dev/null
check "--async-save logs the time training was blocked, then the background write" \
  bash -c 'grep -q "step 3 copied to host memory in [0-9.]* ms (training blocked)" <<<"$1" &&
    grep -q "step 3 saved to .* (written in the background in" <<<"$1"' _ "$out"
check "... and writes the same checkpoint, bit for bit" \
  bash -c '"$1" ckpt diff "$2/model.safetensors" "$3/model.safetensors" && "$1" ckpt verify "$2" &&
    "$1" ckpt diff "$2/optimizer.safetensors" "$3/optimizer.safetensors"' _ "$WEFT" "$WORK/async" "$WORK/sync"

# ---- --async-save with pp 2: each stage's writer (dp 0, tp 0) copies its
# stage at the step boundary and writes it from a thread; rank 0's thread
# joins the stage files once all are in and renames the folder.  The save of
# step 2 is written while step 3 trains: resuming from it must give steps 3
# and 4 of the straight run bit for bit (a copy taken late, or a stage's file
# missing or stale, cannot).
build_plan pp2 "$PLAN" "${set[@]}" --set mesh.pp=2 --set model.layers=2 --set train.steps=4 \
  --set train.ckpt_every=2
run_plan pp2 --steps 4 --save "$WORK/pp2_straight" --metrics "$WORK/pp2_straight.jsonl" >/dev/null
out=$("$WORK/pp2/launch.sh" --steps 3 --ckpt "$WORK/pp2_async" --async-save 2>&1) || true
check "pp 2 --async-save logs the time training was blocked, then the background write" \
  bash -c 'grep -q "step 2 copied to host memory in [0-9.]* ms (training blocked); writing .* (one writer per pipeline stage)" <<<"$1" &&
    grep -q "step 2 saved to .* (written in the background in" <<<"$1"' _ "$out"
check "... a verified checkpoint of step 2, the stage files joined" \
  bash -c '"$1" ckpt verify "$2" | grep -q ": step 2, .*: verified$" && ! ls "$2" | grep -q stage' _ \
  "$WEFT" "$WORK/pp2_async"
run_plan pp2 --steps 4 --resume "$WORK/pp2_async" --save "$WORK/pp2_resumed" \
  --metrics "$WORK/pp2_resumed.jsonl" >/dev/null
check "... resumed from it: steps 3 and 4 as the straight run, bit for bit" \
  bash -c 'cmp -s <(sed -n 3,4p "$1" | sed "s/, \"ms\".*//") <(sed "s/, \"ms\".*//" "$2") &&
    "$3" ckpt diff "$4/model.safetensors" "$5/model.safetensors" >/dev/null &&
    "$3" ckpt diff "$4/optimizer.safetensors" "$5/optimizer.safetensors" >/dev/null' _ \
  "$WORK/pp2_straight.jsonl" "$WORK/pp2_resumed.jsonl" "$WEFT" "$WORK/pp2_straight" "$WORK/pp2_resumed"
check "weft check states the async copy at the step boundary, per stage" \
  bash -c '"$1" check "$2" "${@:3}" | grep -q "^  async copy  *[0-9.]* [KMG]iB  *[0-9.]* [KMG]iB"' _ \
  "$WEFT" "$PLAN" "${set[@]}" --set mesh.pp=2 --set model.layers=2

echo "$passed passed, $failed failed"
[ $failed = 0 ]
