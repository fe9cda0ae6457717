package redlock

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Every helper the scripts share lives once, in prelude.lua. A script is
// its own file headed by the prelude's declarations it uses, directly or
// through another, in the prelude's order: Lua builds every function a
// script declares at each call (about 0.1 µs each on the server), so
// heading a release with the restart helpers it never calls would cost
// every Unlock. Redis numbers a script's lines from its first, the
// prelude's; script.explain names the file and line instead.

// A script is one script file headed by the parts of prelude.lua it uses,
// and the SHA1 EVALSHA knows it by.
type script struct {
	name, src, sha string
	origin         []string // per line of src, the "file:line" it comes from
}

func newScript(name, body string) *script {
	var src strings.Builder
	var origin []string
	for _, p := range preludeFor(body) {
		src.WriteString(p.text)
		for i := range strings.Count(p.text, "\n") {
			origin = append(origin, fmt.Sprintf("prelude.lua:%d", p.first+i))
		}
	}
	src.WriteString(body)
	for i := range strings.Count(body, "\n") + 1 {
		origin = append(origin, fmt.Sprintf("%s:%d", name, i+1))
	}
	sum := sha1.Sum([]byte(src.String()))
	return &script{name: name, src: src.String(), sha: hex.EncodeToString(sum[:]), origin: origin}
}

// A part is one top-level declaration of prelude.lua: a paragraph (its
// lines up to a blank one, the comment above the code included), and the
// names it declares.
type part struct {
	text  string
	first int // its first line in prelude.lua, from 1
	names []string
}

// declared matches a top-level declaration: "local function f", or
// "local a, b =" or "local a" alone.
var declared = regexp.MustCompile(`(?m)^local (?:function (\w+)|([\w, ]+?)\s*(?:=|$))`)

// preludeParts are prelude.lua's declarations, in order.
var preludeParts = func() []part {
	var parts []part
	first := 1
	for _, para := range strings.SplitAfter(preludeSrc, "\n\n") {
		p := part{text: para, first: first}
		first += strings.Count(para, "\n")
		for _, m := range declared.FindAllStringSubmatch(para, -1) {
			for _, n := range strings.Split(m[1]+m[2], ",") {
				if n = strings.TrimSpace(n); n != "" {
					p.names = append(p.names, n)
				}
			}
		}
		if len(p.names) > 0 {
			parts = append(parts, p)
		}
	}
	return parts
}()

// preludeFor returns the parts of the prelude that body uses, directly or
// through the parts it uses, in the prelude's order.
func preludeFor(body string) []part {
	used := make([]bool, len(preludeParts))
	code := []string{luaCode(body)}
	for len(code) > 0 {
		c := code[len(code)-1]
		code = code[:len(code)-1]
		for i, p := range preludeParts {
			if !used[i] && mentions(c, p.names) {
				used[i] = true
				code = append(code, luaCode(p.text))
			}
		}
	}
	var out []part
	for i, p := range preludeParts {
		if used[i] {
			out = append(out, p)
		}
	}
	return out
}

// mentions reports whether code names one of names as a word.
func mentions(code string, names []string) bool {
	for _, n := range names {
		if regexp.MustCompile(`\b` + n + `\b`).MatchString(code) {
			return true
		}
	}
	return false
}

// luaComment matches a comment: "--" to the end of the line (the scripts
// have no "--" inside a string).
var luaComment = regexp.MustCompile(`--.*`)

func luaCode(src string) string { return luaComment.ReplaceAllString(src, "") }

// scriptLine matches the line Redis names in a script error.
var scriptLine = regexp.MustCompile(`user_script:(\d+)`)

// explain rewrites the lines a Redis script error names ("user_script:130")
// into the files and lines they come from ("acquire.lua:12",
// "prelude.lua:96"). Other errors are returned as they are.
func (s *script) explain(err error) error {
	var rerr redis.Error
	if err == nil || !errors.As(err, &rerr) || !strings.Contains(err.Error(), "user_script:") {
		return err
	}
	msg := scriptLine.ReplaceAllStringFunc(err.Error(), func(m string) string {
		n, _ := strconv.Atoi(m[len("user_script:"):])
		if n < 1 || n > len(s.origin) {
			return m
		}
		return s.origin[n-1]
	})
	return &scriptError{msg: msg, err: err}
}

// A scriptError is a Redis script error whose lines name the script files.
type scriptError struct {
	msg string
	err error
}

func (e *scriptError) Error() string { return e.msg }
func (e *scriptError) Unwrap() error { return e.err }
