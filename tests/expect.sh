# expect.sh: the checks the shell tests share (sourced). Each prints "ok    WHAT" or
# "FAIL  WHAT: ..." with the text it looked in, and a failure sets fail=1; the test ends with
# exit $fail.
fail=0
expect() { # expect WHAT PATTERN TEXT: TEXT holds PATTERN (an extended regex)
    if ! grep -Eq -- "$2" <<<"$3"; then
        echo "FAIL  $1: /$2/ not in:"; echo "$3"; fail=1
    else
        echo "ok    $1"
    fi
}
refute() { # refute WHAT PATTERN TEXT: TEXT does not
    if grep -Eq -- "$2" <<<"$3"; then
        echo "FAIL  $1: /$2/ in:"; echo "$3"; fail=1
    else
        echo "ok    $1"
    fi
}
