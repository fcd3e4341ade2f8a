package termview

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/drovehq/drove/events"
)

// Screen redraws a block of lines in place on a terminal: each Draw moves
// the cursor back up over the lines the last one drew and overwrites them,
// so the terminal shows one table that changes, not a scroll of lines.
// Lines are cut to the width (a wrapped line would break the count) and
// the block to the height.
type Screen struct {
	Out io.Writer
	// Width and Height are the terminal's size; 0 means 100×30.
	Width, Height int
	drawn         int
}

// Draw replaces the block drawn last with lines.
func (s *Screen) Draw(lines []string) {
	w, h := s.Width, s.Height
	if w <= 0 {
		w = 100
	}
	if h <= 0 {
		h = 30
	}
	if len(lines) > h-1 {
		more := len(lines) - (h - 2)
		lines = append(lines[:h-2:h-2], fmt.Sprintf("… %d more lines (a taller terminal shows them)", more))
	}
	var b strings.Builder
	if s.drawn > 0 {
		fmt.Fprintf(&b, "\r\x1b[%dA", s.drawn)
	}
	for _, l := range lines {
		b.WriteString("\x1b[2K" + fit(l, w-1) + "\n")
	}
	// A shorter block than last time: blank the rest, then come back up
	// so the next block starts where this one did.
	for i := len(lines); i < s.drawn; i++ {
		b.WriteString("\x1b[2K\n")
	}
	if extra := s.drawn - len(lines); extra > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", extra)
	}
	s.drawn = len(lines)
	io.WriteString(s.Out, b.String())
}

// fit cuts s to n columns (runes: the view draws no wide characters).
func fit(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:max(n-1, 0)]) + "…"
}

// Bar draws pct (0 to 100) as a bar of width cells.
func Bar(pct float64, width int) string {
	pct = min(max(pct, 0), 100)
	full := int(pct / 100 * float64(width))
	return strings.Repeat("█", full) + strings.Repeat("░", width-full)
}

// Rate renders bytes per second; "" when unknown.
func Rate(bps int64) string {
	if bps <= 0 {
		return ""
	}
	return events.FormatBytes(bps) + "/s"
}

// Duration renders a time span briefly: 4.2s, 37s, 2m05s, 1h02m03s.
func Duration(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	if d < 10*time.Second {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	d = d.Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	switch {
	case h > 0:
		return fmt.Sprintf("%dh%02dm%02ds", h, m, s)
	case m > 0:
		return fmt.Sprintf("%dm%02ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}

// Table lays rows out in columns padded to their widest cell; a column
// whose header starts with ">" is right-aligned (the ">" is dropped).
func Table(header []string, rows [][]string) []string {
	right := make([]bool, len(header))
	width := make([]int, len(header))
	h := make([]string, len(header))
	for i, c := range header {
		right[i] = strings.HasPrefix(c, ">")
		h[i] = strings.TrimPrefix(c, ">")
		width[i] = utf8.RuneCountInString(h[i])
	}
	for _, r := range rows {
		for i := range min(len(r), len(width)) {
			width[i] = max(width[i], utf8.RuneCountInString(r[i]))
		}
	}
	line := func(cells []string) string {
		var b strings.Builder
		for i := range width {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			if right[i] {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
		}
		return strings.TrimRight(b.String(), " ")
	}
	out := []string{line(h)}
	for _, r := range rows {
		out = append(out, line(r))
	}
	return out
}
