package cli

import "github.com/spf13/cobra"

// commandExamples are the EXAMPLES of each command's --help and manual
// page, by command path. They live here, not in each command's file, so
// that one place shows how the commands fit together.
var commandExamples = map[string]string{
	"encryptfs": `encryptfs init ~/vault
encryptfs mount ~/vault ~/private
encryptfs unmount ~/private
encryptfs fsck ~/vault`,
	"encryptfs init": `encryptfs init ~/vault
encryptfs init --no-recovery-key --passfile ~/.vault-pw ~/vault
encryptfs init --format 1 --cipher xchacha ~/old-style-vault`,
	"encryptfs passwd": `encryptfs passwd ~/vault
encryptfs passwd --recovery-key ~/vault # with the recovery key on stdin`,
	"encryptfs info": `encryptfs info ~/vault
encryptfs info --json ~/vault`,
	"encryptfs key": `encryptfs key list ~/vault
encryptfs key add --new-keyfile ~/vault.key ~/vault`,
	"encryptfs key add": `encryptfs key add --new-keyfile ~/vault.key ~/vault
encryptfs key add --recovery ~/vault`,
	"encryptfs key list":   `encryptfs key list ~/vault`,
	"encryptfs key remove": `encryptfs key remove ~/vault 2    # revoke the recovery key (slot 2)`,
	"encryptfs upgrade":    `encryptfs upgrade ~/old-vault`,
	"encryptfs mount": `encryptfs mount ~/vault ~/private
encryptfs mount -o ro,passfile=/root/vault.pw /srv/vault /mnt/vault
encryptfs mount -f --idle 30m ~/vault ~/private    # foreground; Ctrl-C unmounts`,
	"encryptfs unmount": `encryptfs unmount ~/private`,
	"encryptfs serve": `encryptfs serve webdav ~/vault
encryptfs serve adduser ~/.config/encryptfs/users alice`,
	"encryptfs serve webdav": `encryptfs serve webdav ~/vault                      # http://127.0.0.1:PORT/, printed
encryptfs serve webdav --listen 127.0.0.1:8080 --ro ~/vault
encryptfs serve webdav --listen 0.0.0.0:8443 --cert cert.pem --key key.pem --users ~/.config/encryptfs/users ~/vault`,
	"encryptfs serve adduser": `encryptfs serve adduser ~/.config/encryptfs/users alice   # asks for alice's password twice`,
	"encryptfs fsck": `encryptfs fsck ~/vault
encryptfs fsck --salvage ~/rescued ~/vault
encryptfs fsck --repair ~/vault`,
	"encryptfs freshness": `encryptfs freshness status ~/vault
encryptfs freshness forget --vault-id 0123456789abcdef0123456789abcdef
encryptfs freshness prune --days 180`,
	"encryptfs freshness status": `encryptfs freshness status ~/vault
encryptfs freshness status --grace 48h ~/vault`,
	"encryptfs freshness accept": `encryptfs freshness accept ~/vault    # after restoring it from a backup`,
	"encryptfs freshness forget": `encryptfs freshness forget ~/vault
encryptfs freshness forget --yes --vault-id 0123456789abcdef0123456789abcdef`,
	"encryptfs freshness prune": `encryptfs freshness prune              # lists what it would remove
encryptfs freshness prune --days 90 --yes`,
	"encryptfs ls": `encryptfs ls ~/vault
encryptfs ls -lR ~/vault /photos`,
	"encryptfs cat": `encryptfs cat ~/vault /notes/todo.txt`,
	"encryptfs export": `encryptfs export ~/vault ~/plain              # the whole vault into ~/plain
encryptfs export ~/vault ~/photos /photos     # /photos/x.jpg becomes ~/photos/x.jpg`,
	"encryptfs import": `encryptfs import ~/vault ~/Documents /Documents  # ~/Documents/a becomes /Documents/a
encryptfs import ~/vault ~/notes.txt            # /notes.txt`,
	"encryptfs encrypt-path": `encryptfs encrypt-path ~/vault /notes/todo.txt`,
	"encryptfs decrypt-path": `encryptfs decrypt-path ~/vault ~/vault/Xb2w.../QmZk...`,
	"encryptfs version":      `encryptfs --version`,
	"encryptfs completion":   `encryptfs completion bash > /etc/bash_completion.d/encryptfs`,
	"encryptfs man": `encryptfs man | man -l -
encryptfs man --dir /usr/local/share/man/man1`,
	"encryptfs help": `encryptfs help mount`,
}

// setExamples gives every command in the tree its example.
func setExamples(c *cobra.Command) {
	if ex, ok := commandExamples[c.CommandPath()]; ok {
		c.Example = ex
	}
	for _, child := range c.Commands() {
		setExamples(child)
	}
}
