{
  description = "code-executor: one MCP server in front of all your MCP servers, as a binary and as a hardened image";

  # Pinned: one nixpkgs revision (nixos-25.11 branch), locked with its NAR hash in flake.lock.
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/8fd9daa3db09ced9700431c5b7ad0e8ba199b575";

  outputs = { self, nixpkgs }:
    let
      system = "x86_64-linux";
      pkgs = import nixpkgs { inherit system; };
      lib = pkgs.lib;
      cargoToml = builtins.fromTOML (builtins.readFile ./Cargo.toml);

      # The server binary, from Cargo.lock (no network during the build).
      code-executor = pkgs.rustPlatform.buildRustPackage {
        pname = "code-executor";
        version = cargoToml.package.version;
        src = lib.cleanSourceWith {
          src = ./.;
          # `secrets/` holds the appliance's token file (see compose.yaml): never in the store.
          filter = path: type:
            let base = baseNameOf path; in
            !(builtins.elem base [ "target" ".venv" "deploy" ".git" "secrets" ]);
        };
        cargoLock.lockFile = ./Cargo.lock;
        # The tests need the runtimes, a Python MCP client and real MCP servers: `scripts/test`.
        doCheck = false;
        meta.mainProgram = "code-executor";
      };

      # The pinned runtime tarballs (the same SHA-256 as src/sandbox/runtimes.rs), installed the way
      # `code-executor fetch-runtimes` installs them: <dir>/<name>-<version>/package + .verified.
      deno = pkgs.fetchurl {
        url = "https://registry.npmjs.org/@deno/linux-x64-glibc/-/linux-x64-glibc-2.9.6.tgz";
        sha256 = "a6596af07f3570b4f1ffa6783bfee9942aac14a719a601baa6bf5b71bf0105e2";
      };
      pyodide = pkgs.fetchurl {
        url = "https://registry.npmjs.org/pyodide/-/pyodide-314.0.7.tgz";
        sha256 = "66b7949e5a0cba2250b586d7e368bf12fb482800748d182c4618254b685ffaa0";
      };
      runtimes = pkgs.stdenv.mkDerivation {
        pname = "code-executor-runtimes";
        version = "deno-2.9.6-pyodide-314.0.7";
        dontUnpack = true;
        nativeBuildInputs = [ pkgs.autoPatchelfHook ];
        buildInputs = [ pkgs.stdenv.cc.cc.lib ];
        installPhase = ''
          mkdir -p $out/deno-2.9.6 $out/pyodide-314.0.7
          tar -xzf ${deno} -C $out/deno-2.9.6
          tar -xzf ${pyodide} -C $out/pyodide-314.0.7
          chmod +x $out/deno-2.9.6/package/deno
          echo a6596af07f3570b4f1ffa6783bfee9942aac14a719a601baa6bf5b71bf0105e2 > $out/deno-2.9.6/.verified
          echo 66b7949e5a0cba2250b586d7e368bf12fb482800748d182c4618254b685ffaa0 > $out/pyodide-314.0.7/.verified
        '';
      };

      # The Pyodide snapshot holds absolute paths of the Pyodide files; store paths are the same
      # inside the image, so it is made here, by the server itself, against the store runtimes.
      snapshot = pkgs.runCommand "code-executor-pyodide-snapshot" { } ''
        mkdir -p $out home
        HOME=$PWD/home \
        CODE_EXECUTOR_RUNTIME_DIR=${runtimes} \
        CODE_EXECUTOR_CACHE_DIR=$out \
        CODE_EXECUTOR_PROJECT_DIR=$PWD/home \
          ${code-executor}/bin/code-executor fetch-runtimes
      '';

      # The same root layout as the Dockerfile's: user and group 1001, no shell.
      root = pkgs.runCommand "code-executor-image-root" { } ''
        mkdir -p $out/usr/local/bin $out/usr/bin $out/etc/ssl/certs $out/home/executor
        ln -s ${code-executor}/bin/code-executor $out/usr/local/bin/code-executor
        ln -s ${pkgs.tini}/bin/tini $out/usr/bin/tini
        cat > $out/etc/passwd <<EOF
        root:x:0:0:root:/nonexistent:/nonexistent
        executor:x:1001:1001:code-executor:/home/executor:/nonexistent
        EOF
        cat > $out/etc/group <<EOF
        root:x:0:
        executor:x:1001:
        EOF
        printf 'passwd: files\ngroup: files\nhosts: files dns\n' > $out/etc/nsswitch.conf
        ln -s ${pkgs.cacert}/etc/ssl/certs/ca-bundle.crt $out/etc/ssl/certs/ca-certificates.crt
      '';

      image = pkgs.dockerTools.buildLayeredImage {
        name = "code-executor";
        tag = "latest";
        contents = [ root ];
        # /tmp for the tmpfs, /config and /audit for the volumes (owned by 1001, as in the
        # Dockerfile); no setuid file anywhere.
        fakeRootCommands = ''
          mkdir -p tmp config audit
          chmod 1777 tmp
          chown 1001:1001 config audit
          chmod 0700 config audit
        '';
        enableFakechroot = false;
        config = {
          User = "1001:1001";
          WorkingDir = "/home/executor";
          Entrypoint = [ "/usr/bin/tini" "--" "/usr/local/bin/code-executor" ];
          Cmd = [ "serve" "--http" "0.0.0.0:8765" "--init-config" ];
          Env = [
            "PATH=/usr/local/bin:/usr/bin"
            "HOME=/home/executor"
            "CODE_EXECUTOR_RUNTIME_DIR=${runtimes}"
            "CODE_EXECUTOR_CACHE_DIR=${snapshot}"
            "CODE_EXECUTOR_PROJECT_DIR=/home/executor"
            "CODE_EXECUTOR_CONFIG=/config/config.toml"
          ];
          ExposedPorts = { "8765/tcp" = { }; "9464/tcp" = { }; };
          Healthcheck = {
            Test = [ "CMD" "/usr/local/bin/code-executor" "healthcheck" ];
            Interval = 10000000000;
            Timeout = 6000000000;
            StartPeriod = 60000000000;
            Retries = 3;
          };
        };
      };
    in
    {
      packages.${system} = {
        default = code-executor;
        inherit code-executor runtimes snapshot image;
      };
      apps.${system}.default = {
        type = "app";
        program = "${code-executor}/bin/code-executor";
      };
      devShells.${system}.default = pkgs.mkShell {
        packages = [ pkgs.cargo pkgs.rustc pkgs.clippy pkgs.rustfmt pkgs.python3 pkgs.tini ];
      };
    };
}
