package main

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// wrapWriter writes lines of at most width columns (runes) to w: a longer
// line is broken at spaces, and its continuations are indented by indent
// spaces. A word longer than a continuation line is left whole. Lines are
// written as they end; Flush writes a last one without a newline. It is
// safe for concurrent use.
type wrapWriter struct {
	w             io.Writer
	width, indent int

	mu  sync.Mutex // guards buf and err
	buf []byte
	err error
}

func (ww *wrapWriter) Write(p []byte) (int, error) {
	ww.mu.Lock()
	defer ww.mu.Unlock()
	if ww.err != nil {
		return 0, ww.err
	}
	ww.buf = append(ww.buf, p...)
	for {
		i := bytes.IndexByte(ww.buf, '\n')
		if i < 0 {
			break
		}
		line := string(ww.buf[:i])
		ww.buf = ww.buf[i+1:]
		if _, err := io.WriteString(ww.w, wrapLine(line, ww.width, ww.indent)); err != nil {
			ww.err = err
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes what is left of an unfinished line.
func (ww *wrapWriter) Flush() {
	ww.mu.Lock()
	defer ww.mu.Unlock()
	if len(ww.buf) > 0 && ww.err == nil {
		s := wrapLine(string(ww.buf), ww.width, ww.indent)
		_, ww.err = io.WriteString(ww.w, strings.TrimSuffix(s, "\n"))
		ww.buf = nil
	}
}

// wrapLine returns line, broken into lines of at most width runes, each
// ending in a newline.
func wrapLine(line string, width, indent int) string {
	if utf8.RuneCountInString(line) <= width {
		return line + "\n"
	}
	var b strings.Builder
	pad := strings.Repeat(" ", indent)
	cur := line
	for utf8.RuneCountInString(cur) > width {
		// The last space at or before the width, past the indent.
		cut := -1
		n := 0
		for i, r := range cur {
			if n > width {
				break
			}
			if r == ' ' && n > indent {
				cut = i
			}
			n++
		}
		if cut < 0 {
			break // one word wider than the line: leave it whole
		}
		b.WriteString(strings.TrimRight(cur[:cut], " "))
		b.WriteByte('\n')
		cur = pad + strings.TrimLeft(cur[cut:], " ")
	}
	b.WriteString(cur)
	b.WriteByte('\n')
	return b.String()
}
