// Command pulumi-language-python is the project's own minimal Python language host for the real-engine run
// (tests/e2e). Pulumi's host lives in its own module, github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3,
// which the Go module proxy this project can reach does not serve; its Python half does come with sdk/v3
// (python/cmd/pulumi-language-python-exec, the script that runs the program against the engine). This host speaks the
// same gRPC protocol (pulumirpc.LanguageRuntime) for the calls `pulumi preview/up/destroy --policy-pack` make:
//
//   - Run: starts `<venv>/bin/python -u pulumi-language-python-exec --monitor ... PROGRAM` with PULUMI_CONFIG and
//     PULUMI_CONFIG_SECRET_KEYS, exactly as Pulumi's host does; exit code 32 (a message already shown) bails.
//   - RunPlugin of kind analyzer: `python -u -m pulumi.policy ARGS PACKDIR` in the pack's own virtualenv, behind
//     sdk/v3's PolicyProxy (stack configuration to the pack), as Pulumi's host does.
//   - GetRequiredPackages: none. The engine then loads each provider when the program first registers a resource
//     of its package; scripts/e2e puts the providers it built on PATH (no plugin download).
//   - InstallDependencies: nothing; scripts/test made the virtual environments.
//
// Everything else (code generation, templates, debugging, uv/poetry toolchains) answers Unimplemented.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	sdk "github.com/pulumi/pulumi/sdk/v3"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/cmdutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/version"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
)

const (
	execScript              = "pulumi-language-python-exec"
	userActionableExitCode  = 32 // the exec script printed the error for the user already
	pulumiConfigVar         = "PULUMI_CONFIG"
	pulumiConfigSecretsVar  = "PULUMI_CONFIG_SECRET_KEYS"
	defaultVirtualenvOption = "venv"
)

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer
	exec          string
	engineAddress string
	cancel        context.Context
	cancelFunc    context.CancelFunc
}

func main() {
	flag.String("tracing", "", "ignored")
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println(version.Version)
		return
	}
	self, err := os.Executable()
	if err != nil {
		cmdutil.Exit(err)
	}
	script := filepath.Join(filepath.Dir(self), execScript)
	if _, err := os.Stat(script); err != nil {
		cmdutil.Exit(fmt.Errorf("missing %s beside the language host: %w", execScript, err))
	}
	h := &host{exec: script}
	h.cancel, h.cancelFunc = context.WithCancel(context.Background())
	if args := flag.Args(); len(args) > 0 {
		h.engineAddress = args[0]
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	done := make(chan bool)
	go func() { <-ctx.Done(); stop(); close(done) }()
	if h.engineAddress != "" {
		if err := rpcutil.Healthcheck(ctx, h.engineAddress, 5*time.Minute, stop); err != nil {
			cmdutil.Exit(err)
		}
	}
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Cancel: done,
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(srv, h)
			return nil
		},
	})
	if err != nil {
		cmdutil.Exit(err)
	}
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		cmdutil.Exit(err)
	}
}

func (h *host) Handshake(ctx context.Context, req *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	h.engineAddress = req.EngineAddress
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *host) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version.Version}, nil
}

func (h *host) GetRequiredPackages(context.Context, *pulumirpc.GetRequiredPackagesRequest,
) (*pulumirpc.GetRequiredPackagesResponse, error) {
	return &pulumirpc.GetRequiredPackagesResponse{}, nil
}

func (h *host) GetRequiredPlugins(context.Context, *pulumirpc.GetRequiredPluginsRequest,
) (*pulumirpc.GetRequiredPluginsResponse, error) {
	return &pulumirpc.GetRequiredPluginsResponse{}, nil
}

func (h *host) InstallDependencies(req *pulumirpc.InstallDependenciesRequest,
	server grpc.ServerStreamingServer[pulumirpc.InstallDependenciesResponse],
) error {
	return nil
}

func (h *host) GetProgramDependencies(context.Context, *pulumirpc.GetProgramDependenciesRequest,
) (*pulumirpc.GetProgramDependenciesResponse, error) {
	return &pulumirpc.GetProgramDependenciesResponse{}, nil
}

func (h *host) About(context.Context, *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	return &pulumirpc.AboutResponse{Executable: "python3"}, nil
}

func (h *host) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	h.cancelFunc()
	return &emptypb.Empty{}, nil
}

// python is the interpreter of the virtual environment named by the runtime's `virtualenv` option (relative to
// root), with the environment that activating it gives; without the option, python3 from PATH.
func python(root string, options *structpb.Struct) (string, []string, error) {
	env := os.Environ()
	venv := ""
	if options != nil {
		if v, ok := options.AsMap()["virtualenv"].(string); ok {
			venv = v
		}
	}
	if venv == "" {
		return "python3", env, nil
	}
	if !filepath.IsAbs(venv) {
		venv = filepath.Join(root, venv)
	}
	bin := filepath.Join(venv, "bin", "python")
	if _, err := os.Stat(bin); err != nil {
		return "", nil, fmt.Errorf("the runtime's virtualenv %s has no bin/python (scripts/test creates .venv, "+
			"scripts/e2e policies/venv): %w", venv, err)
	}
	env = append(env, "VIRTUAL_ENV="+venv, "PATH="+filepath.Join(venv, "bin")+":"+os.Getenv("PATH"))
	return bin, env, nil
}

func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	py, env, err := python(req.Info.RootDirectory, req.Info.Options)
	if err != nil {
		return nil, err
	}
	args := []string{"-u", h.exec}
	add := func(k, v string) {
		if v != "" {
			args = append(args, "--"+k, v)
		}
	}
	add("monitor", req.GetMonitorAddress())
	add("engine", h.engineAddress)
	add("project", req.GetProject())
	add("root_directory", req.GetInfo().RootDirectory)
	add("stack", req.GetStack())
	add("pwd", req.GetPwd())
	add("dry_run", strconv.FormatBool(req.GetDryRun()))
	add("parallel", strconv.Itoa(int(req.GetParallel())))
	add("organization", req.GetOrganization())
	args = append(args, req.Info.EntryPoint)
	args = append(args, req.GetArgs()...)

	configMap := req.GetConfig()
	if configMap == nil {
		configMap = map[string]string{}
	}
	config, err := json.Marshal(configMap)
	if err != nil {
		return nil, err
	}
	secretKeys := req.GetConfigSecretKeys()
	if secretKeys == nil {
		secretKeys = []string{}
	}
	secrets, err := json.Marshal(secretKeys)
	if err != nil {
		return nil, err
	}
	runCtx, runCancel := context.WithCancel(h.cancel)
	defer runCancel()
	context.AfterFunc(ctx, runCancel)
	cmd := exec.CommandContext(runCtx, py, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = req.GetPwd()
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Env = append(env, pulumiConfigVar+"="+string(config), pulumiConfigSecretsVar+"="+string(secrets))
	if err := cmd.Run(); err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.ExitStatus() == userActionableExitCode {
				return &pulumirpc.RunResponse{Bail: true}, nil
			}
			return &pulumirpc.RunResponse{Error: fmt.Sprintf("program exited with non-zero exit code: %d",
				exitErr.ExitCode())}, nil
		}
		return &pulumirpc.RunResponse{Error: "could not run the Python program: " + err.Error()}, nil
	}
	return &pulumirpc.RunResponse{}, nil
}

// RunPlugin starts a Python policy pack (the only plugin kind this host runs).
func (h *host) RunPlugin(req *pulumirpc.RunPluginRequest,
	server grpc.ServerStreamingServer[pulumirpc.RunPluginResponse],
) error {
	if req.Kind != string(apitype.AnalyzerPlugin) {
		return fmt.Errorf("this language host runs Python policy packs only, not a %q plugin", req.Kind)
	}
	ctx := server.Context()
	options := req.Info.Options
	if options == nil || options.AsMap()["virtualenv"] == nil {
		options, _ = structpb.NewStruct(map[string]any{"virtualenv": defaultVirtualenvOption})
	}
	py, env, err := python(req.Info.ProgramDirectory, options)
	if err != nil {
		return err
	}
	args := append([]string{"-u", "-m", "pulumi.policy"}, req.Args...)
	args = append(args, req.Info.ProgramDirectory)
	cmd := exec.CommandContext(ctx, py, args...)
	cmd.Dir = req.Info.ProgramDirectory
	closer, stdout, stderr, err := rpcutil.MakeRunPluginStreams(server, false)
	if err != nil {
		return err
	}
	defer closer.Close()
	proxy, stdout, err := sdk.NewPolicyProxy(ctx, stdout)
	if err != nil {
		return fmt.Errorf("could not start the policy pack proxy: %w", err)
	}
	config, err := proxy.AwaitConfiguration(ctx)
	if err != nil {
		return fmt.Errorf("could not get the stack configuration: %w", err)
	}
	if config != nil {
		set := func(k, v string) {
			if v != "" {
				env = append(env, k+"="+v)
			}
		}
		set("PULUMI_ORGANIZATION", config.Organization)
		set("PULUMI_PROJECT", config.Project)
		set("PULUMI_STACK", config.Stack)
		set("PULUMI_DRY_RUN", strconv.FormatBool(config.DryRun))
		if config.Config != nil {
			b, err := json.Marshal(config.Config)
			if err != nil {
				return err
			}
			set(pulumiConfigVar, string(b))
		}
	}
	cmd.Env = append(env, req.Env...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("could not start the policy pack: %w", err)
	}
	if err := proxy.Attach(ctx, cmd); err != nil {
		return fmt.Errorf("could not attach the policy pack: %w", err)
	}
	return closer.Close()
}
