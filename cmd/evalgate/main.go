package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/evalgate/evalgate/internal/embedded"
	"github.com/evalgate/evalgate/schema"
)

// Exit codes. They are part of the interface CI scripts rely on.
const (
	exitOK        = 0
	exitGateFail  = 1 // a blocking gate failed
	exitBadInput  = 2 // bad usage or bad input: fix the command or the files
	exitOperation = 3 // the evaluation could not run (I/O, queue, cancelled)
)

// profileFile receives the CPU profile when --cpuprofile is given.
var profileFile *os.File

// traceFile receives the execution trace when --trace is given.
var traceFile *os.File

// startRecording creates path and starts a recording (what) into it,
// closing the file if the recording does not start.
func startRecording(path, what string, start func(io.Writer) error) (*os.File, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", what, err)
	}
	return f, nil
}

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := onSignals(cancel, stderr)
	defer stop()
	app := newApp(stdout, stderr)
	err := app.RunContext(ctx, args)
	return report(err, stderr, app.Metadata)
}

// onSignals cancels the command at the first SIGINT or SIGTERM (a worker
// then finishes or hands back its tasks, a coordinator stops) and exits
// at once at the second, for when stopping cleanly takes too long (a
// server that is down). It returns a function that stops listening.
func onSignals(cancel context.CancelFunc, stderr io.Writer) func() {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case sig := <-sigs:
			fmt.Fprintf(stderr, "evalgate: %v: stopping; a second signal exits at once\n", sig)
			cancel()
		case <-done:
			return
		}
		select {
		case sig := <-sigs:
			fmt.Fprintf(stderr, "evalgate: %v again: exiting now (tasks held return to the queue after the ack wait)\n", sig)
			os.Exit(exitOperation)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
		wg.Wait()
	}
}

// usageError marks mistakes in how the command was called: unknown or
// missing flags, flag values out of range, flags that do not go together.
// They are reported with a hint to the help.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// inputError marks a problem with the files or data a command was given
// that is not a *schema.InputError: a file that does not exist, a path
// that cannot be written, a baseline that does not fit. Exit code 2, like
// usage errors, but without the hint to the help, which cannot fix it.
type inputError struct{ err error }

func (e inputError) Error() string { return e.err.Error() }
func (e inputError) Unwrap() error { return e.err }

func inputf(format string, args ...any) error { return inputError{fmt.Errorf(format, args...)} }

// pathCause is the cause of a file system error without the operation and
// path it repeats ("no such file or directory" for "stat x: no such file
// or directory"), for messages that name the path themselves.
func pathCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// gateFailed is returned when a blocking gate failed; the verdict has been
// printed already.
type gateFailed struct{ msg string }

func (g gateFailed) Error() string { return g.msg }

// errorLogKey is the app metadata key under which a command whose stderr
// is a JSON log (run, worker, server with --log-format json, or auto off
// a terminal) stores its name: its fatal error is then one more log line.
const errorLogKey = "fatal-error-as-log"

// logFatalErrors makes the command's fatal error a line of its log when
// the log is JSON, so that the log stays one JSON object per line and the
// error is printed once. For the commands that log as they run.
func logFatalErrors(c *cli.Context) {
	if jsonLog, err := logFormatJSON(c); err == nil && jsonLog {
		c.App.Metadata[errorLogKey] = c.Command.Name
	}
}

// report prints err and returns the exit code: 1 for a failed gate, 2 for
// bad usage or input, 3 for everything else (the machine, the queue, an
// interruption). It prints nothing for a failed gate (the verdict is
// printed already).
func report(err error, stderr io.Writer, meta map[string]any) int {
	if err == nil {
		return exitOK
	}
	code, text := classify(err)
	if code == exitGateFail {
		return code
	}
	if cmd, ok := meta[errorLogKey].(string); ok {
		log := zerolog.New(stderr).With().Timestamp().Logger()
		log.Error().Int("exit_code", code).Str("error", err.Error()).Msgf("evalgate %s failed", cmd)
		return code
	}
	fmt.Fprint(stderr, text)
	return code
}

// classify gives err's exit code and its text for a terminal.
func classify(err error) (int, string) {
	var gf gateFailed
	var ue usageError
	var ie inputError
	switch {
	case errors.As(err, &gf):
		return exitGateFail, ""
	case errors.As(err, &ue):
		return exitBadInput, fmt.Sprintf("Error: %v\nTry: evalgate --help\n", err)
	case schema.IsInvalidInput(err):
		return exitBadInput, fmt.Sprintf("Error: bad input:\n%v\n", err)
	case errors.As(err, &ie), errors.Is(err, os.ErrNotExist), errors.Is(err, os.ErrPermission), errors.Is(err, syscall.EISDIR),
		errors.Is(err, syscall.ENOTDIR), errors.Is(err, embedded.ErrBadStore):
		return exitBadInput, fmt.Sprintf("Error: %v\n", err)
	case errors.Is(err, context.Canceled):
		return exitOperation, "Error: interrupted\n"
	}
	return exitOperation, fmt.Sprintf("Error: %v\n", err)
}

func newApp(stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Metadata:  map[string]any{},
		Name:      "evalgate",
		Usage:     "score retrieval runs against a gold set and gate releases on the result",
		Version:   version,
		Writer:    stdout,
		ErrWriter: stderr,
		// -m takes trec_eval's cutoff lists (recall.5,10), which only the
		// measure parser can read, and file names may hold commas.
		DisableSliceFlagSeparator: true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "log-level", Value: "warn", Usage: "debug, info, warn or error"},
			&cli.StringFlag{Name: "log-format", Value: "auto", Usage: "auto (console on a terminal, JSON otherwise), console or json"},
			&cli.StringFlag{Name: "cpuprofile", Usage: "write a CPU profile (pprof) of the command to this file", Hidden: true},
			&cli.StringFlag{Name: "memprofile", Usage: "write an allocation profile (pprof) at exit to this file", Hidden: true},
			&cli.StringFlag{Name: "trace", Usage: "write an execution trace (go tool trace) of the command to this file", Hidden: true},
		},
		Before: func(c *cli.Context) (err error) {
			if p := c.String("cpuprofile"); p != "" {
				if profileFile, err = startRecording(p, "cpu profile", pprof.StartCPUProfile); err != nil {
					return err
				}
			}
			if p := c.String("trace"); p != "" {
				if traceFile, err = startRecording(p, "trace", trace.Start); err != nil {
					return err
				}
			}
			return nil
		},
		After: func(c *cli.Context) error {
			if p := c.String("memprofile"); p != "" {
				f, err := os.Create(p)
				if err != nil {
					return fmt.Errorf("create %s: %w", p, err)
				}
				if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
					f.Close()
					return fmt.Errorf("write allocation profile: %w", err)
				}
				if err := f.Close(); err != nil {
					return fmt.Errorf("write allocation profile: %w", err)
				}
			}
			if traceFile != nil {
				trace.Stop()
				if err := traceFile.Close(); err != nil {
					return fmt.Errorf("write trace: %w", err)
				}
			}
			if profileFile != nil {
				pprof.StopCPUProfile()
				return profileFile.Close()
			}
			return nil
		},
		Commands: usageChecked(
			scoreCommand(),
			runCommand(),
			serverCommand(),
			workerCommand(),
			statusCommand(),
			gateCommand(),
			compareCommand(),
			judgeCommand(),
			historyCommand(),
			convertCommand(),
			genCommand(),
		),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("unknown command %q", c.Args().First())
			}
			return cli.ShowAppHelp(c)
		},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error { return usageError{err} },
		// Errors are printed once, by report.
		ExitErrHandler: func(*cli.Context, error) {},
	}
}

// usageChecked makes flag errors of every command usage errors (exit 2),
// and refuses arguments where a command takes none (a stray word is
// usually a flag that lost its dashes, or a global flag given after the
// command).
func usageChecked(cmds ...*cli.Command) []*cli.Command {
	for _, c := range cmds {
		c.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
			if strings.Contains(err.Error(), "flag provided but not defined: -log-") {
				err = fmt.Errorf("%w (--log-level and --log-format go before the command: evalgate --log-level info %s ...)", err, c.Name)
			}
			return usageError{err}
		}
		if c.ArgsUsage == "" && c.Action != nil {
			action := c.Action
			c.Action = func(ctx *cli.Context) error {
				if ctx.NArg() > 0 {
					return usagef("%s takes no arguments, got %q", c.Name, ctx.Args().First())
				}
				return action(ctx)
			}
		}
		c.Subcommands = usageChecked(c.Subcommands...)
	}
	return cmds
}

// required checks that flags were given; urfave's Required flags report
// their absence as an error of an unexported type.
func required(c *cli.Context, names ...string) error {
	for _, n := range names {
		if !c.IsSet(n) {
			return usagef("flag --%s is required", n)
		}
	}
	return nil
}

// markRequired adds "(required)" to the usage of the named flags, for a
// command that requires flags it shares with commands that do not.
func markRequired(flags []cli.Flag, names ...string) []cli.Flag {
	for _, f := range flags {
		if sf, ok := f.(*cli.StringFlag); ok && slices.Contains(names, sf.Name) && !strings.Contains(sf.Usage, "(required") {
			sf.Usage += " (required)"
		}
	}
	return flags
}

// logFormatJSON says whether the log is JSON, from --log-format (auto:
// JSON unless stderr is a terminal).
func logFormatJSON(c *cli.Context) (bool, error) {
	switch c.String("log-format") {
	case "json":
		return true, nil
	case "console":
		return false, nil
	case "auto":
		f, ok := c.App.ErrWriter.(*os.File)
		return !(ok && isatty.IsTerminal(f.Fd())), nil
	}
	return false, usagef("--log-format %q: want auto, console or json", c.String("log-format"))
}

// logger builds the process logger from the global flags.
func logger(c *cli.Context) (zerolog.Logger, error) {
	level, err := zerolog.ParseLevel(c.String("log-level"))
	if err != nil {
		return zerolog.Nop(), usagef("--log-level %q: want debug, info, warn or error", c.String("log-level"))
	}
	jsonLog, err := logFormatJSON(c)
	if err != nil {
		return zerolog.Nop(), err
	}
	w := c.App.ErrWriter
	if !jsonLog {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger(), nil
}
