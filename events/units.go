package events

import "fmt"

// FormatBytes renders a byte count the way every Drove message and screen
// shows one (512 B, 3.2 MiB, 1.0 GiB): executors write it into Progress
// messages, the command line prints it, and one spelling keeps an operator
// from comparing "3.2 MiB" with "3355443 bytes".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
