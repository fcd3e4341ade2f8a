package apachekafka

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ServerDefaults are the server properties every node starts with, before
// Options.Settings. They are the broker's own, not a topic's: Drove sets
// and checks its topics' settings itself (kafka.EnsureTopics). What they
// change from Kafka's defaults, and why:
//   - no auto-created topics, as in production: a topic Drove did not
//     create has settings nobody chose;
//   - internal topics replicated on every node up to three, and
//     transactions' state written to two replicas when there are three,
//     so the loss of one broker loses no commit;
//   - the first rebalance of a group is not held back 3 s for more
//     members: a standby planner takes over without that wait;
//   - the internal topics in 3 partitions, not 50: they are created at
//     their first use, every partition at once, which took seconds on a
//     small machine for nothing a demo or a test needs.
func ServerDefaults(nodes int) map[string]string {
	rf := strconv.Itoa(min(nodes, 3))
	isr := strconv.Itoa(min(nodes, 2))
	return map[string]string{
		"auto.create.topics.enable":                "false",
		"offsets.topic.replication.factor":         rf,
		"transaction.state.log.replication.factor": rf,
		"transaction.state.log.min.isr":            isr,
		"default.replication.factor":               rf,
		"group.initial.rebalance.delay.ms":         "0",
		"offsets.topic.num.partitions":             "3",
		"transaction.state.log.num.partitions":     "3",
	}
}

// writeConfig writes the node's server.properties and log configuration.
func (n *Node) writeConfig() error {
	o := n.c.opts
	props := ServerDefaults(len(n.c.Nodes))
	maps.Copy(props, map[string]string{
		"process.roles":                  "broker,controller",
		"node.id":                        strconv.Itoa(n.ID),
		"controller.quorum.voters":       n.c.voters(),
		"controller.listener.names":      "CONTROLLER",
		"inter.broker.listener.name":     o.Listener.Name,
		"listeners":                      fmt.Sprintf("%s://%s:%d,CONTROLLER://%s:%d", o.Listener.Name, n.Host, n.Port, n.Host, n.ControllerPort),
		"advertised.listeners":           fmt.Sprintf("%s://%s:%d", o.Listener.Name, n.Host, n.Port),
		"listener.security.protocol.map": fmt.Sprintf("CONTROLLER:PLAINTEXT,%s:%s", o.Listener.Name, o.Listener.Protocol),
		"log.dirs":                       filepath.Join(n.Dir, "data"),
		"num.partitions":                 "3",
	})
	maps.Copy(props, o.Settings)
	if err := os.WriteFile(n.propsFile(), []byte(render(props)), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(n.Dir, "log4j2.properties"), []byte(log4j), 0o644)
}

// voters is the static controller quorum: every node.
func (c *Cluster) voters() string {
	var vs []string
	for _, n := range c.Nodes {
		vs = append(vs, fmt.Sprintf("%d@%s:%d", n.ID, n.Host, n.ControllerPort))
	}
	return strings.Join(vs, ",")
}

// render is props as a properties file, sorted by key.
func render(props map[string]string) string {
	var b strings.Builder
	b.WriteString("# Written by Drove (deploy/apachekafka) at each start; edits are lost.\n")
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&b, "%s=%s\n", k, escape(props[k]))
	}
	return b.String()
}

// escape makes v one line of a properties file.
func escape(v string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\r", `\r`).Replace(v)
}

// log4j keeps the broker's log to what matters: warnings and errors, and
// the line that says it started.
const log4j = `status = error
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.out.ref = OUT
logger.server.name = kafka.server.KafkaRaftServer
logger.server.level = INFO
`
